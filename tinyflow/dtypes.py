"""The one dtype promotion rule of elementwise results, in graph, eager and to_static mode alike (as PyTorch): the
widest float type of the operands wins (float32 with int64 is float32), else numpy's integer rule (int32 stays int32).
A Python number next to a tensor takes the tensor's dtype where it fits (`as_node`, `Tensor.constant`)."""
import numpy as np

FLOAT32 = np.dtype(np.float32)


def promote(*dtypes):
    """The dtype of an elementwise result on operands of these dtypes."""
    dtypes = [np.dtype(d) for d in dtypes if d is not None]
    floats = [d for d in dtypes if d.kind in "fc"]
    if floats:
        return max(floats, key=lambda d: (d.kind == "c", d.itemsize))
    numbers = [d for d in dtypes if d.kind in "iu"]
    if numbers:
        return np.result_type(*numbers)
    return dtypes[0] if dtypes else FLOAT32


def promote_to_float(*dtypes):
    """The promoted dtype, made float32 when it is not a float (exp, division: ints give float32)."""
    dtype = promote(*dtypes)
    return dtype if dtype.kind in "fc" else FLOAT32
