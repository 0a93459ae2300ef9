"""The tables of ONNX op rules, filled by the rule files, read by the importer and the exporter."""
OPSET = 17  # the opset tfl.onnx.export writes
IMPORTS = {}  # ONNX op type -> fn(ctx, node)
EXPORTS = {}  # tinyflow op type -> fn(exporter, node)


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


def same_op(onnx_type, **attributes):
    """An export rule for a tinyflow op that is one ONNX op on the same inputs; {ONNX attribute: node field}."""
    def rule(ex, node):
        values = {key: getattr(node, field) for key, field in attributes.items()}
        return ex.emit(onnx_type, [ex.name_of(i) for i in node.inputs], onnx_type,
                       **{key: value for key, value in values.items() if value is not None})
    return rule
