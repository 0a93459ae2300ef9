"""The tables of ONNX op rules (see the package's docstring): filled by the rule files, read by the importer
and the exporter."""
OPSET = 17  # the opset tfl.onnx.export writes
IMPORTS = {}  # ONNX op type -> fn(ctx, node)
EXPORTS = {}  # tinyflow op type -> fn(exporter, node)


def imports(*onnx_op_types):
    """Decorator: register `fn(ctx, node)` as the import rule of these ONNX op types (default domain)."""
    def register(fn):
        for op_type in onnx_op_types:
            IMPORTS[op_type] = fn
        return fn
    return register


def exports(*tinyflow_op_types):
    """Decorator: register `fn(exporter, node)` as the export rule of these tinyflow op types."""
    def register(fn):
        for op_type in tinyflow_op_types:
            EXPORTS[op_type] = fn
        return fn
    return register


def same_op(onnx_type):
    """An export rule for tinyflow ops that are one ONNX op on the same inputs."""
    return lambda ex, node: ex.emit(onnx_type, [ex.name_of(i) for i in node.inputs], onnx_type)
