"""The tables of ONNX op rules, filled by the rule files, read by the importer and the exporter."""
import numpy as np

OPSET = 17  # the opset tfl.onnx.export writes
IMPORTS = {}  # ONNX op type -> fn(ctx, node)
EXPORTS = {}  # tinyflow op type -> fn(exporter, node)
REQUIRED = object()  # the default of an attribute the node must carry (ctx.attr, op_rule)


def _registrar(table):
    def register_as(*op_types):
        def register(fn):
            table.update(dict.fromkeys(op_types, fn))
            return fn
        return register
    return register_as


imports = _registrar(IMPORTS)  # @imports("Relu", ...): fn(ctx, node) imports these ONNX op types
exports = _registrar(EXPORTS)  # @exports("Relu", ...): fn(exporter, node) exports these tinyflow op types


def op_rule(fn, **attributes):
    """An import rule calling fn(inputs..., **attributes, name=) with {keyword: (ONNX attribute, default)}."""
    def rule(ctx, node):
        kwargs = {}
        for key, (attr, default) in attributes.items():
            value = ctx.attr(attr, default)
            kwargs[key] = bool(value) if isinstance(default, bool) else value  # ONNX's 0 / 1 flags
        return fn(*ctx.inputs(), **kwargs, name=ctx.name)
    return rule


def int64s(ex, values, hint):
    """An initializer holding `values` as an int64 vector (ONNX's shapes, axes, pads); returns its name."""
    return ex.constant(np.array([int(v) for v in values], np.int64), hint)


def same_op(onnx_type, vectors=(), **attributes):
    """An export rule: one ONNX op on the node's inputs, then on int64 vectors of its fields `vectors`."""
    def rule(ex, node):
        inputs = [ex.name_of(i) for i in node.inputs] + [int64s(ex, getattr(node, f), f) for f in vectors]
        values = {key: field(node) if callable(field) else getattr(node, field) for key, field in attributes.items()}
        return ex.emit(onnx_type, inputs, onnx_type, **{k: v for k, v in values.items() if v is not None})
    return rule
