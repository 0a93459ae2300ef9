"""What the C and OpenCL kernel tables share: the codes of ckernels/tinyflow_kernels.h (parsed from the header, so
Python has them without the built library; OpenCL gets them as `-D` options), window geometry, and the `accepts`
predicates and op -> kernel names of their entries."""
import functools
import math
import pathlib
import re
import weakref

from ..errors import TinyflowError
from ..ops.windows import window_output_size

HEADER = pathlib.Path(__file__).resolve().parents[2] / "ckernels" / "tinyflow_kernels.h"
ENUM_NAMES = ("tf_layout_kind", "tf_broadcast_pattern", "tf_reduce_op", "tf_update_kind", "tf_recurrent_cell",
              "tf_limits")  # every enum of the header (tests/backends/test_native.py checks it)


def _load():
    """{enum name: {constant: value}} for every `enum name { A = 0, ... };` of the header; without the header
    (an installed wheel), the built library's copy of them."""
    if HEADER.is_file():
        enums = {}
        for name, body in re.findall(r"enum\s+(\w+)\s*\{(.*?)\}", HEADER.read_text(), re.S):
            body = re.sub(r"/\*.*?\*/", "", body, flags=re.S)
            enums[name] = {key: int(value) for key, value in re.findall(r"(\w+)\s*=\s*(-?\d+)", body)}
        return enums
    from . import native
    if native.ffi is None:
        raise ImportError(f"neither {HEADER} nor the built C library is there to read the kernel codes from")
    return {name: dict(native.ffi.typeof(f"enum {name}").relements) for name in ENUM_NAMES}


ENUMS = _load()
# how the elementwise kernels read an input (fused.py's kinds; the rest are expanded first)
LAYOUT_KINDS = {kind: ENUMS["tf_layout_kind"][name] for kind, name in
                (("full", "TF_FULL"), ("row", "TF_ROW"), ("col", "TF_COLUMN"), ("scalar", "TF_SCALAR"))}
REDUCE = {op_type: ENUMS["tf_reduce_op"][f"TF_REDUCE_{op_type[6:].upper()}"]
          for op_type in ("ReduceSum", "ReduceMean", "ReduceMax")}
PARALLEL_MIN = ENUMS["tf_limits"]["TF_PARALLEL_MIN"]

# the kernels of both tables by op type (the C library's are tf_<name>_f32 / _f64)
ROW_KERNELS = {"Softmax": "softmax", "LogSoftmax": "log_softmax", "SoftmaxGrad": "softmax_back",
               "LogSoftmaxGrad": "log_softmax_back", "LayerNorm": "layer_norm", "LayerNormGrad": "layer_norm_back"}
POOL_KERNELS = {"MaxPool": "maxpool", "MaxPoolGrad": "maxpool_back", "MaxPoolGather": "maxpool_gather"}
# update op type -> (its enum tf_update_kind, its slots in the kernels' s1, s2, s3 order, its hyper-parameters in
# the kernels' order after lr, the hyper-parameter passed as the kernels' flag); see ckernels/src/optim.c
UPDATES = {
    "ApplySGD": ("TF_UPDATE_SGD", ("momentum_buffer",), ("momentum", "dampening", "weight_decay"), "nesterov"),
    "ApplyAdam": ("TF_UPDATE_ADAM", ("exp_avg", "exp_avg_sq", "max_exp_avg_sq"),
                  ("beta1", "beta2", "eps", "weight_decay"), "decoupled"),
    "ApplyRMSProp": ("TF_UPDATE_RMSPROP", ("square_avg", "grad_avg", "momentum_buffer"),
                     ("alpha", "eps", "weight_decay", "momentum"), None),
    "ApplyAdaGrad": ("TF_UPDATE_ADAGRAD", ("state_sum",), ("lr_decay", "eps", "weight_decay"), None),
}


def opencl_defines():
    """Every shared constant as an OpenCL `-DNAME=value` build option."""
    return [f"-D{key}={value}" for codes in ENUMS.values() for key, value in codes.items()]


def layout_code(kinds):
    """The elementwise kernels' `kinds` argument (two bits per input), or None for a kind they cannot read."""
    if not all(kind in LAYOUT_KINDS for kind in kinds):
        return None
    return sum(LAYOUT_KINDS[kind] << 2 * i for i, kind in enumerate(kinds))


def reduce_dims(shape, axes):
    """(outer, n, inner): `shape` viewed as three axes, the middle one the run of reduced `axes`."""
    return math.prod(shape[:axes[0]]), math.prod(shape[axes[0]:axes[-1] + 1]), math.prod(shape[axes[-1] + 1:])


def update_hyper(op, lr):
    """An update op's [lr, *hyper-parameters in the kernels' order] and its flag, read now (users may change them)."""
    _, _, names, flag = UPDATES[op.op_type]
    h = op.hyper
    values = [float(h["betas"][name == "beta2"] if name in ("beta1", "beta2") else h[name]) for name in names]
    return [float(lr)] + values, int(bool(h[flag])) if flag else 0


def window_geometry(x_shape, kernel, stride, pads, dilation, out):
    """(n, c, h, w, kh, kw, sh, sw, ph, pw, dh, dw, ho, wo) of a window over (N, C, H, W) data (1-D: one row), or
    None. Only the leading pads: the kernels skip taps outside x, and (ho, wo) say how far the windows go."""
    if len(x_shape) == 3:
        x_shape = (x_shape[0], x_shape[1], 1, x_shape[2])
        kernel, stride, dilation, out = [(1,) + tuple(v) for v in (kernel, stride, dilation, out)]
        pads = ((0, 0),) + tuple(pads)
    if len(x_shape) != 4 or len(kernel) != 2 or pads is None or None in out or min(out) < 1:
        return None
    (kh, kw), (sh, sw), ((ph, _), (pw, _)), (dh, dw), (ho, wo) = kernel, stride, pads, dilation, out
    return (*x_shape, kh, kw, sh, sw, ph, pw, dh, dw, ho, wo)


def pooled_shape(x_shape, geometry):
    """The (N, C, *spatial) output of a window of `geometry` over data of x_shape (1-D or 2-D)."""
    return tuple(x_shape[:2]) + geometry[12:14][-(len(x_shape) - 2):]


def spatial_out(op, x_shape, kernel):
    """The op's output spatial sizes on an input of x_shape, or None when its window does not fit."""
    try:
        return op.out_spatial(tuple(x_shape), tuple(kernel))
    except TinyflowError:
        return None


# ---------------------------------------------------------------- `accepts(op, *values)` predicates (shapes only)
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
    """Matrices whose inner dimensions match: two, a batch of them and one, or two batches of one shape."""
    return len(a.shape) >= 2 and len(b.shape) >= 2 and a.shape[-1] == b.shape[-2] and (
        len(a.shape) == 2 or len(b.shape) == 2 or a.shape[:-2] == b.shape[:-2])


MEMO_LIMIT = 64  # shapes remembered per op: a training loop sees a few (the last batch is smaller)
_GEOMETRIES = weakref.WeakKeyDictionary()  # op -> {(function, *shapes): geometry}; kept off the op's attributes


def memoised_on_shapes(geometry):
    """`geometry(op, *arrays or shapes)`, remembered per op and shapes: an op's window attributes never change after
    it is made, so its geometry depends on the shapes alone, and the dispatch asks twice per call (accepts, run)."""
    @functools.wraps(geometry)
    def remembered(op, *values):
        if op.graph is None:  # an eager op, made anew for each call: nothing to remember it by
            return geometry(op, *values)
        memo = _GEOMETRIES.get(op)
        if memo is None or len(memo) > MEMO_LIMIT:
            memo = _GEOMETRIES[op] = {}
        key = (geometry, *[getattr(v, "shape", v) for v in values])
        if key not in memo:
            memo[key] = geometry(op, *values)
        return memo[key]
    return remembered


@memoised_on_shapes
def conv_geometry(op, x_shape, w_shape, grad_shape=None):
    """The geometry of a 1-D or 2-D convolution of x by w (O, C/G, *kernel) with an output gradient, or None."""
    if len(x_shape) not in (3, 4) or len(w_shape) != len(x_shape) or x_shape[1] != w_shape[1] * op.groups \
            or w_shape[0] % op.groups:
        return None
    pads = op.pads(x_shape[2:], w_shape[2:])
    out = tuple(window_output_size(n, k, s, p, d) for n, k, s, p, d in
                zip(x_shape[2:], w_shape[2:], op.stride, pads, op.dilation))
    if grad_shape is not None and tuple(grad_shape) != (x_shape[0], w_shape[0]) + out:
        return None
    return window_geometry(x_shape, w_shape[2:], op.stride, pads, op.dilation, out)


def transposed_input_shape(op, x, w):
    """The shape of the convolution input a transposed convolution op produces from x by w (its output's)."""
    out = spatial_out(op, x.shape, w.shape[2:])
    return None if out is None else (x.shape[0], w.shape[1] * op.groups) + out


@memoised_on_shapes
def pool_geometry(op, x, *other):
    """The window's geometry for x (N, C, *spatial) and `other` of the op's shape; None: it does not fit."""
    x_shape = tuple(x.shape)
    out = spatial_out(op, x_shape, op.kernel) if len(x_shape) in (3, 4) else None
    if out is None:
        return None
    needed = x_shape[:2] + out if op.op_type == "MaxPoolGrad" else x_shape
    if other and tuple(other[0].shape) != needed:
        return None
    return window_geometry(x_shape, op.kernel, op.stride, op.pads(x_shape[2:], op.kernel), op.dilation, out)


# op type -> positions of (convolution input, filter[, output gradient]) among the op's inputs
CONV_ROLES = {"Conv": (0, 1), "ConvBiasAct": (0, 1), "ConvBackInput": (2, 1, 0), "ConvBackFilter": (0, 2, 1)}


def fits_conv(op, *arrays):
    """Input, filter (and gradient) of a 1-D or 2-D convolution op have consistent shapes."""
    if op.op_type == "ConvTranspose":
        x, w = arrays
        shape = transposed_input_shape(op, x, w)
        return shape is not None and conv_geometry(op, shape, w.shape, x.shape) is not None
    # called as the kernel calls it (with shapes), which finds it memoised
    return conv_geometry(op, *[arrays[role].shape for role in CONV_ROLES[op.op_type]]) is not None
