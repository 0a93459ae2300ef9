"""ONNX op rules, both directions, one file per op family; an op's import and export rules sit side by side.

    @imports("LeakyRelu")                      # the ONNX op type
    def import_leaky_relu(ctx, node):
        return tfl.leaky_relu(ctx.input(0), alpha=ctx.attr("alpha", 0.01), name=ctx.name)

    @exports("LeakyRelu")                      # the tinyflow op type
    def export_leaky_relu(ex, node):
        return ex.emit("LeakyRelu", [ex.name_of(node.inputs[0])], "LeakyRelu", alpha=float(node.alpha))

An import rule gets an ImportContext (importer.py: its methods are the rule API) and the NodeProto, and returns
per ONNX output a tinyflow node, a numpy array (known at import time) or None (an optional output nobody reads).
A node whose inputs are all known is folded (its rule runs on constants aside), so rules never special-case
constants. Every attribute a node carries must be read (ctx.attr), or it is unsupported. An export rule gets the
exporter (export.py) and a tinyflow node, and returns the ONNX value's name. Rules that differ only in data are
rows: op_rule(fn, keyword=(attribute, default)) imports, same_op(onnx_type, ...) exports.
"""
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


from . import (control_flow_rules, core_rules, elementwise_rules, nn_rules,  # noqa: E402, F401 - they register
               recurrent_rules, reductions_rules, tensor_rules)
