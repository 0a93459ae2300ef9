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
from .rule_tables import EXPORTS, IMPORTS, OPSET, REQUIRED, exports, imports, op_rule, same_op  # noqa: F401
from . import (control_flow_rules, core_rules, elementwise_rules, nn_rules,  # noqa: F401 - they register
               recurrent_rules, reductions_rules, tensor_rules)
