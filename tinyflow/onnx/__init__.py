"""ONNX both ways: import any ONNX model as a tinyflow graph, export tinyflow programs (opset 17).

    prog = tfl.onnx.load("model.onnx")      # Placeholders, Variables, tinyflow ops; runs, draws, trains
    prog({"x": x})                          # {output name: numpy array}
    tfl.onnx.run("model.onnx", {"x": x})    # the same in one call
    tfl.onnx.export(layer_or_fn, "m.onnx", input_spec=[...])
    tfl.onnx.export_graph([x], [y], "m.onnx")   # graph mode: from Placeholders to nodes

One rule per ONNX op, both ways, in rules/ (the rule API is documented there); docs/onnx.md is the ops table.
"""
from ..errors import OnnxExportError, OnnxImportError
from .export import OPSET, export, export_graph
from .importer import ImportContext, OnnxProgram, load, run

__all__ = ["load", "run", "OnnxProgram", "OnnxImportError", "export", "export_graph", "OnnxExportError", "OPSET",
           "ImportContext"]
