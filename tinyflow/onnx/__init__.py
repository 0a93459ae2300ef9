"""ONNX both ways: import any ONNX model as a tinyflow graph, export tinyflow programs (opset 17).

    prog = tfl.onnx.load("model.onnx")      # Placeholders, Variables, tinyflow ops; runs, draws, trains
    prog({"x": x})                          # {output name: numpy array}
    tfl.onnx.run("model.onnx", {"x": x})    # the same in one call
    tfl.onnx.export(layer_or_fn, "m.onnx", input_spec=[...])
    tfl.onnx.export_graph([x], [y], "m.onnx")   # graph mode: from Placeholders to nodes

How each ONNX op maps to tinyflow ops, both ways, is one rule per op in tinyflow/onnx/rules/ (the
rule API is documented there); the ops conformance table is docs/onnx.md.
"""
from ..errors import OnnxExportError, OnnxImportError
from .export import OPSET, export, export_graph
from .importer import ImportContext, OnnxProgram, load, run

__all__ = ["load", "run", "OnnxProgram", "OnnxImportError", "export", "export_graph", "OnnxExportError", "OPSET",
           "ImportContext"]
