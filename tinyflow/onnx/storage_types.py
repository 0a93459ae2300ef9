"""ONNX element types as numpy dtypes, and ONNX's narrow storage types (bfloat16, float8, float4, int4, int2).

A tensor of a narrow type holds its *values* in a wider dtype (bfloat16 in float32, int4 in int8); a Cast to one
rounds to its values (RoundToType), and a model's inputs and outputs of narrow types are ml_dtypes arrays.
"""
import numpy as np

from ..arguments import Arguments
from ..nodes import Operation
from ..ops.registry import not_differentiable
from ..errors import OnnxExportError

# TensorProto.DataType code -> numpy dtype, for the types tinyflow computes with
_NUMPY_OF = {code: np.dtype(t) for code, t in {
    1: np.float32, 2: np.uint8, 3: np.int8, 4: np.uint16, 5: np.int16, 6: np.int32, 7: np.int64, 9: np.bool_,
    10: np.float16, 11: np.float64, 12: np.uint32, 13: np.uint64}.items()}
_ONNX_OF = {dtype: code for code, dtype in _NUMPY_OF.items()}
# ONNX element type code -> (ml_dtypes type name, the numpy dtype holding its values)
STORAGE_TYPES = {16: ("bfloat16", np.float32), 17: ("float8_e4m3fn", np.float32), 18: ("float8_e4m3fnuz", np.float32),
                 19: ("float8_e5m2", np.float32), 20: ("float8_e5m2fnuz", np.float32), 21: ("uint4", np.uint8),
                 22: ("int4", np.int8), 23: ("float4_e2m1fn", np.float32), 24: ("float8_e8m0fnu", np.float32),
                 25: ("uint2", np.uint8), 26: ("int2", np.int8)}
_SATURATING = {17, 18, 19, 20}  # the float8 types, whose casts saturate unless told not to


def numpy_dtype(elem_type, narrow=False):
    """The numpy dtype of an ONNX element type (`narrow`: also a narrow type's holding dtype), or None."""
    entry = STORAGE_TYPES.get(int(elem_type)) if narrow else None
    return _NUMPY_OF.get(int(elem_type)) if entry is None else np.dtype(entry[1])


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


def narrow_dtype(elem_type):
    """The ml_dtypes dtype of a narrow ONNX type (what onnx's numpy_helper uses for it)."""
    import ml_dtypes
    return np.dtype(getattr(ml_dtypes, STORAGE_TYPES[int(elem_type)][0]))


def to_held(array):
    """A numpy array of a narrow type (an ml_dtypes dtype) as its holding dtype; other arrays as they are."""
    array = np.asarray(array)
    held = dict(STORAGE_TYPES.values()).get(array.dtype.name)
    return array if held is None else array.astype(held)


class RoundToType(Operation):
    """x rounded to the values of a narrow ONNX type, kept in x's dtype: what a Cast to that type computes."""

    def __init__(self, x, elem_type, saturate=True, round_mode="up", name=None):
        check = Arguments(self, name, x)
        self.elem_type = check.integer("elem_type", elem_type)
        if self.elem_type not in STORAGE_TYPES:
            check.fail("elem_type", elem_type, "is not a narrow ONNX type",
                       f"pass one of the codes {sorted(STORAGE_TYPES)} (onnx.TensorProto.BFLOAT16, ...)")
        self.saturate = check.flag("saturate", saturate)
        if round_mode not in ("up", "down", "nearest"):
            check.fail("round_mode", round_mode, "is not a rounding mode", "pass 'up', 'down' or 'nearest'")
        self.round_mode = round_mode
        super().__init__(x, name=name)

    def compute(self, x):
        from onnx import numpy_helper
        dtype = narrow_dtype(self.elem_type)
        if self.elem_type == 24:  # float8e8m0: a power of two, with its own rounding modes
            rounded = numpy_helper.to_float8e8m0(np.asarray(x, np.float32), self.saturate, self.round_mode)
        elif self.elem_type in _SATURATING and self.saturate:
            rounded = numpy_helper.saturate_cast(np.asarray(x), dtype)
        else:
            rounded = np.asarray(x).astype(dtype)
        return rounded.astype(dtype).astype(x.dtype)  # the narrow type's values, in x's dtype


not_differentiable(RoundToType)
