"""The codes shared by the C kernels, the OpenCL kernels and Python, read from their one declaration.

`ckernels/tinyflow_kernels.h` declares them as C enums (cffi exposes them on the
built library); this module parses that header once, so Python has them even when
the C library is not built, and hands them to OpenCL as `-D` build options.
It also holds the geometry both kernel families use: broadcasting layouts and the
NCHW window geometry of convolution and pooling.
"""
import functools
import math
import pathlib
import re

from ..ops.conv import window_output_size

HEADER = pathlib.Path(__file__).resolve().parents[2] / "ckernels" / "tinyflow_kernels.h"


def _parse_enums(text):
    """{enum name: {constant: value}} for every `enum name { A = 0, ... };` in C source text."""
    enums = {}
    for name, body in re.findall(r"enum\s+(\w+)\s*\{(.*?)\}", text, re.S):
        body = re.sub(r"/\*.*?\*/", "", body, flags=re.S)
        enums[name] = {key: int(value) for key, value in re.findall(r"(\w+)\s*=\s*(-?\d+)", body)}
    return enums


def _load():
    """The header's enums; without the header (an installed wheel), the built library's copy of them."""
    if HEADER.is_file():
        return _parse_enums(HEADER.read_text())
    from . import native
    if native.ffi is None:
        raise ImportError(f"neither {HEADER} nor the built C library is there to read the kernel codes from")
    return {name: dict(native.ffi.typeof(f"enum {name}").relements) for name in ENUM_NAMES}


ENUM_NAMES = ("tf_binary_op", "tf_unary_op", "tf_broadcast_pattern", "tf_reduce_op", "tf_limits")
ENUMS = _load()

# op type -> code, for the op types the kernels implement
BINARY = {"Add": ENUMS["tf_binary_op"]["TF_ADD"], "Subtract": ENUMS["tf_binary_op"]["TF_SUBTRACT"],
          "Multiply": ENUMS["tf_binary_op"]["TF_MULTIPLY"], "Divide": ENUMS["tf_binary_op"]["TF_DIVIDE"],
          "Maximum": ENUMS["tf_binary_op"]["TF_MAXIMUM"], "Minimum": ENUMS["tf_binary_op"]["TF_MINIMUM"]}
UNARY = {"Negative": ENUMS["tf_unary_op"]["TF_NEGATIVE"], "Square": ENUMS["tf_unary_op"]["TF_SQUARE"],
         "Sqrt": ENUMS["tf_unary_op"]["TF_SQRT"], "Exp": ENUMS["tf_unary_op"]["TF_EXP"],
         "Log": ENUMS["tf_unary_op"]["TF_LOG"], "Abs": ENUMS["tf_unary_op"]["TF_ABS"]}
REDUCE = {"ReduceSum": ENUMS["tf_reduce_op"]["TF_REDUCE_SUM"], "ReduceMean": ENUMS["tf_reduce_op"]["TF_REDUCE_MEAN"],
          "ReduceMax": ENUMS["tf_reduce_op"]["TF_REDUCE_MAX"]}
PATTERN = ENUMS["tf_broadcast_pattern"]
PARALLEL_MIN = ENUMS["tf_limits"]["TF_PARALLEL_MIN"]


def opencl_defines():
    """Every shared constant as an OpenCL `-DNAME=value` build option."""
    return [f"-D{key}={value}" for codes in ENUMS.values() for key, value in codes.items()]


@functools.lru_cache(maxsize=1024)
def broadcast_layout(a_shape, b_shape):
    """(pattern, rows, cols, out_shape) of a broadcasting pattern the kernels know, or None.

    Patterns (enum tf_broadcast_pattern): same shape, b/a a single value, b/a a row
    repeated over the other's leading axes, b/a a column (leading axes, ones after).
    """
    size = math.prod  # math.prod: numpy's prod costs microseconds on a small tuple
    a_shape, b_shape = tuple(a_shape), tuple(b_shape)
    if a_shape == b_shape:
        return PATTERN["TF_SAME_SHAPE"], size(a_shape), 1, a_shape
    for scalar, row, column, big, small in (("TF_B_SCALAR", "TF_B_ROW", "TF_B_COLUMN", a_shape, b_shape),
                                            ("TF_A_SCALAR", "TF_A_ROW", "TF_A_COLUMN", b_shape, a_shape)):
        if len(small) > len(big):
            continue
        if size(small) == 1:
            return PATTERN[scalar], size(big), 1, big
        padded = (1,) * (len(big) - len(small)) + small
        for split in range(1, len(big)):
            if padded[:split] == (1,) * split and padded[split:] == big[split:]:
                cols = size(big[split:])
                return PATTERN[row], size(big) // cols, cols, big
            if padded[:split] == big[:split] and padded[split:] == (1,) * (len(big) - split):
                rows = size(big[:split])
                return PATTERN[column], rows, size(big) // rows, big
    return None


def window_geometry(x_shape, kernel, stride, padding):
    """(n, c, h, w, kh, kw, sh, sw, ph, pw, ho, wo) of a window over NCHW data, or None if it does not fit."""
    n, c, h, w = x_shape
    (kh, kw), (sh, sw), (ph, pw) = kernel, stride, padding
    ho, wo = window_output_size(h, kh, sh, ph), window_output_size(w, kw, sw, pw)
    return None if ho < 1 or wo < 1 else (n, c, h, w, kh, kw, sh, sw, ph, pw, ho, wo)
