"""Exporting tinyflow programs to ONNX (opset 17) for onnxruntime and other runtimes."""
from .export import OPSET, OnnxExportError, export

__all__ = ["export", "OnnxExportError", "OPSET"]
