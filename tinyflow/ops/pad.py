"""Padding: pad (np.pad's constant, reflect, edge and wrap modes; a negative width crops).

Each axis of the output reads one input position per output position (or the constant): the forward pass is np.pad, and
the gradient adds g back into those positions, so a reflected or repeated edge value collects every copy's gradient.
"""
import numpy as np

from ..arguments import Arguments, is_int, rank_of
from ..nodes import Operation
from .broadcasting import ShapedLike
from .registry import op_function, register_gradient

MODES = ("constant", "reflect", "edge", "wrap")


class Pad(Operation):
    """x with pad_width[i] = (before, after) entries added along axis i (removed where negative).  mode "constant" fills
    with `value`; "reflect" mirrors without the edge, "edge" repeats it, "wrap" continues from the other side (np.pad's
    modes). Gradient: g summed into the positions each output entry copies."""

    def __init__(self, x, pad_width, mode="constant", value=0.0, name=None):
        check, rank = Arguments(self, name, x), rank_of(x)
        if rank is None:
            check.fail("pad_width", pad_width, "needs an input of known rank", "give the input a shape")
        widths = np.asarray(pad_width, dtype=object)  # an int, a pair (before, after) or one per axis
        if widths.shape not in ((), (2,), (rank, 2)) or not all(is_int(w) for w in widths.flat):
            check.fail("pad_width", pad_width, f"is not an int, a pair or {rank} (before, after) pairs",
                       "pass e.g. 1, (1, 2) or ((0, 0), (1, 2)) with one pair per axis")
        self.pad_width = tuple((int(b), int(a)) for b, a in np.broadcast_to(widths, (rank, 2)))
        if not isinstance(mode, str) or mode not in MODES:
            check.fail("mode", mode, "is not a padding mode", f"pass one of {', '.join(MODES)}")
        self.mode = mode
        self.value = check.number("value", value, low=-np.inf) if mode == "constant" else 0.0
        shape = getattr(x, "shape", None) or ()
        for axis, ((before, after), size) in enumerate(zip(self.pad_width, shape)):
            if size is not None and min(before, 0) + min(after, 0) < -size:
                check.fail("pad_width", pad_width, f"crops more than the {size} entries of axis {axis}",
                           "crop at most the whole axis")
            if size == 0 and mode != "constant" and max(before, after) > 0:
                check.fail("mode", mode, f"cannot pad the empty axis {axis}", "pad it in 'constant' mode")
        super().__init__(x, name=name)

    def compute(self, x):
        return padded(x, self.pad_width, self.mode, np.asarray(self.value).astype(x.dtype))

    def infer_shape(self, x_shape):
        if x_shape is None:
            return None
        return tuple(None if d is None else d + b + a for d, (b, a) in zip(x_shape, self.pad_width))


pad = op_function(Pad, "pad",
                   "x padded by pad_width (np.pad's forms; negative widths crop) in mode constant/reflect/edge/wrap.")


def padded(x, pad_width, mode, value):
    """np.pad of x in `mode` (constant: `value`), where a negative width crops instead."""
    cropped = x[tuple(slice(-min(b, 0), n + min(a, 0)) for n, (b, a) in zip(x.shape, pad_width))]
    grow = [(max(b, 0), max(a, 0)) for b, a in pad_width]
    return np.pad(cropped, grow, constant_values=value) if mode == "constant" else np.pad(cropped, grow, mode=mode)


class PadGrad(ShapedLike):
    """g (of pad's output shape) added back into the input positions it copies: the gradient of Pad."""

    def __init__(self, grad, x, pad_width, mode, name=None):
        self.pad_width, self.mode = pad_width, mode
        super().__init__(grad, x, name=name)

    def compute(self, grad, x):
        for axis, (before, after) in enumerate(self.pad_width):
            if before == after == 0:
                continue
            source = padded(np.arange(x.shape[axis]), [(before, after)], self.mode, -1)  # the entries copied
            kept = source >= 0
            moved = np.moveaxis(np.compress(kept, grad, axis=axis), axis, 0)
            summed = np.zeros((x.shape[axis],) + moved.shape[1:], grad.dtype)
            np.add.at(summed, source[kept], moved)
            grad = np.moveaxis(summed, 0, axis)
        return np.ascontiguousarray(grad)


register_gradient(Pad)(lambda op, grad: [PadGrad(grad, op.inputs[0], op.pad_width, op.mode)])
register_gradient(PadGrad)(lambda op, grad: [Pad(grad, op.pad_width, op.mode, 0.0), None])
