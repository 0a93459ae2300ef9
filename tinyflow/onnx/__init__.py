"""Exporting tinyflow programs to ONNX (opset 17) for onnxruntime and other runtimes."""
