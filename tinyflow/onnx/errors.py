"""The two ONNX errors: a program that cannot become ONNX, and a model tinyflow cannot import."""
from ..errors import TinyflowError


class OnnxExportError(TinyflowError):
    """A program that cannot become ONNX (an op type without a mapping, or an attribute ONNX lacks)."""


class OnnxImportError(TinyflowError):
    """An ONNX model tinyflow cannot import: a broken file, an invalid graph, or an op or attribute not supported.

    `unsupported` is True when the model is valid ONNX that tinyflow does not handle yet (an op without an
    import rule, an attribute value a rule refuses), False when the model itself is wrong.
    """

    def __init__(self, message, unsupported=False):
        super().__init__(message)
        self.unsupported = unsupported


def onnx_module(error=OnnxImportError):
    """The onnx package, or `error` saying how to install it."""
    try:
        import onnx
    except ImportError:
        raise error(f"tfl.onnx.{'load' if error is OnnxImportError else 'export'} needs the `onnx` package: "
                    "pip install onnx (or pip install -e '.[dev]')") from None
    return onnx
