"""The codes shared by the C kernels, the OpenCL kernels and Python, read from their one declaration.

`ckernels/tinyflow_kernels.h` declares them as C enums (cffi exposes them on the
built library); this module parses that header once, so Python has them even when
the C library is not built, and hands them to OpenCL as `-D` build options.
It also holds the geometry both kernel families use (broadcasting layouts, the NCHW window
geometry of convolution and pooling) and the `accepts` predicates of their table entries.
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
         "Log": ENUMS["tf_unary_op"]["TF_LOG"], "Abs": ENUMS["tf_unary_op"]["TF_ABS"],
         "Erf": ENUMS["tf_unary_op"]["TF_ERF"]}
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


# ---------------------------------------------------------------- what the kernels of both tables accept
# `accepts(op, *values)` predicates of Kernel entries (values are numpy or device arrays: shapes only)
def has_layout(op, a, b):
    """a and b broadcast in one of the patterns the kernels know."""
    return broadcast_layout(a.shape, b.shape) is not None


def reduced_axes(op, x):
    """The op's axes (all when None) if they are one contiguous run, else None."""
    axes = tuple(range(len(x.shape))) if op.axes is None else tuple(op.axes)
    return axes if axes and list(axes) == list(range(axes[0], axes[-1] + 1)) else None


def along_last_axis(op, x, *others):
    """The op works along the last axis of x (the row kernels' layout)."""
    return op.axis % len(x.shape) == len(x.shape) - 1


def labels_fit(op, logits, labels, *grad):
    """Integer labels, one per row of 2-D logits (their range is checked when the kernel runs)."""
    return labels.shape == logits.shape[:1] and labels.dtype.kind in "iu" and all(g.size == 1 for g in grad)


def inner_dims_match(op, a, b):
    """b is a matrix whose rows match a's columns."""
    return len(b.shape) == 2 and a.shape[1] == b.shape[0]


def conv_geometry(op, x, w, grad=None):
    """The geometry of a convolution of x (N, C, H, W) by w (O, C, kH, kW), with a gradient of the output's
    shape when given, or None."""
    if len(x.shape) != 4 or len(w.shape) != 4 or x.shape[1] != w.shape[1]:
        return None
    geometry = window_geometry(x.shape, w.shape[2:], op.stride, op.padding)
    if geometry is None or (grad is not None and grad.shape != (x.shape[0], w.shape[0]) + geometry[10:]):
        return None
    return geometry


def pool_geometry(op, x, *other):
    """The pooling window's geometry for x (N, C, H, W), with `other` of the shape the op needs, or None."""
    geometry = window_geometry(x.shape, op.kernel, op.stride, op.padding)
    if geometry is None or not other:
        return geometry
    needed = x.shape[:2] + geometry[10:] if op.op_type == "MaxPool2DGrad" else x.shape
    return geometry if other[0].shape == needed else None


def fits_pool(op, x, *other):
    """The pooling window fits x, and the other input has the shape the op needs."""
    return pool_geometry(op, x, *other) is not None


def fits_conv(op, *arrays):
    """Input, filter (and gradient) of a convolution op have consistent shapes."""
    x, w, grad = {"Conv2D": (0, 1, None), "Conv2DBackInput": (2, 1, 0), "Conv2DBackFilter": (0, 2, 1)}[op.op_type]
    return conv_geometry(op, arrays[x], arrays[w], None if grad is None else arrays[grad]) is not None
