"""ONNX element types and numpy dtypes, both ways (the ONNX codes are those of onnx.TensorProto)."""
import numpy as np

from .errors import OnnxExportError

# TensorProto.DataType code -> numpy dtype, for the types tinyflow computes with
_NUMPY_OF = {1: np.float32, 2: np.uint8, 3: np.int8, 4: np.uint16, 5: np.int16, 6: np.int32, 7: np.int64,
             9: np.bool_, 10: np.float16, 11: np.float64, 12: np.uint32, 13: np.uint64}
_ONNX_OF = {np.dtype(t): code for code, t in _NUMPY_OF.items()}


def numpy_dtype(elem_type):
    """The numpy dtype of an ONNX element type code, or None when tinyflow has no such dtype."""
    t = _NUMPY_OF.get(int(elem_type))
    return None if t is None else np.dtype(t)


def onnx_type_name(elem_type):
    """The name of an ONNX element type code, e.g. 'FLOAT' or 'BFLOAT16' (for messages)."""
    from onnx import TensorProto
    try:
        return TensorProto.DataType.Name(int(elem_type))
    except ValueError:
        return f"element type {elem_type}"


def onnx_type(dtype):
    """The ONNX element type code of a numpy dtype (OnnxExportError for dtypes ONNX lacks)."""
    code = _ONNX_OF.get(np.dtype(dtype))
    if code is None:
        raise OnnxExportError(f"dtype {dtype} has no ONNX equivalent here; cast to float32, float64, int64 or bool")
    return code
