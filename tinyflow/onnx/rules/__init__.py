"""ONNX op rules, both directions: how an ONNX node becomes tinyflow ops, and how a tinyflow op becomes ONNX.

One file per op family (core, elementwise, reductions, tensor, nn, recurrent, control_flow); the import rule and
the export rule of an op sit side by side, so they stay inverse. Adding an op is adding functions:

    from . import exports, imports

    @imports("LeakyRelu")
    def import_leaky_relu(ctx, node):
        return tfl.leaky_relu(ctx.input(0), alpha=ctx.attr("alpha", 0.01), name=ctx.name)

    @exports("LeakyRelu")                      # the tinyflow op type
    def export_leaky_relu(ex, node):
        return ex.emit("LeakyRelu", [ex.name_of(node.inputs[0])], "LeakyRelu", alpha=float(node.alpha))

An import rule `fn(ctx, node)` gets the ONNX NodeProto and an ImportContext (tinyflow/onnx/importer.py) and
returns, for each ONNX output, a tinyflow node, a numpy array (a value known at import time: it stays a
constant and folds further), or None for an optional output nobody reads; a tuple when the op has several
outputs. The context gives:

    ctx.input(i)        the tinyflow node of input i (None when an optional input is omitted);
                        ctx.input(i, trainable=False) for statistics such as BatchNormalization's mean
    ctx.value(i)        input i's value when it is known at import time (initializers, Constant outputs,
                        folded constant subgraphs such as Shape -> Gather -> Concat on static shapes), else None
    ctx.static(i, what) the same, or an OnnxImportError saying `what` must be known at import time
    ctx.attr(name, default)   an attribute as a Python value (int, float, str, list, numpy array, GraphProto);
                        without a default the attribute is required. Every attribute the node carries must be
                        read by its rule: an unread one is reported as unsupported, never silently ignored.
    ctx.opset           the version of the default ONNX domain the model imports
    ctx.name            the name to give the rule's result (the ONNX node's name, or None)
    ctx.num_inputs, ctx.num_outputs, ctx.output_used(k), ctx.input_dtype(i)
    ctx.unsupported(msg)   an OnnxImportError for valid ONNX that tinyflow does not handle (raise it)
    ctx.fail(msg)       an OnnxImportError for an invalid node (raise it); both name op type, node and opset
    ctx.import_graph(graph, inputs)   imports an ONNX subgraph (If branch, Loop body) into the current
                        tinyflow graph: its formal inputs are bound to `inputs` (tinyflow nodes), other names
                        are read from the enclosing graphs; returns the nodes of its outputs

A node whose present inputs are all known at import time is folded: its rule runs on constants aside and
its outputs become known values (so rules never special-case constants). An ONNX op without a rule is an
OnnxImportError naming op type, node and opset before anything is built.

An export rule `fn(ex, node)` gets the exporter (tinyflow/onnx/export.py: `ex.name_of(node)`,
`ex.emit(onnx_type, inputs, hint, **attrs)`, `ex.constant(array, hint)`, `ex.static_value(node)`) and a
tinyflow node, and returns the ONNX value name holding the node's result.
"""
from .registry import EXPORTS, IMPORTS, OPSET, exports, imports, same_op  # noqa: F401 - the tables
from . import control_flow, core, elementwise, nn, recurrent, reductions, tensor  # noqa: E402,F401 - they register rules
