"""Static shapes: tuples of ints where `None` marks a dimension known only at run time; a whole shape of `None` means
even the rank is unknown."""
import numbers

from .errors import ShapeError


def normalize_shape(shape):
    """Turn a user-given shape (None, int, or a sequence of int/None) into a tuple or None."""
    if shape is None:
        return None
    if isinstance(shape, numbers.Integral) and not isinstance(shape, bool):
        shape = (shape,)
    if isinstance(shape, (str, bytes)) or not hasattr(shape, "__iter__"):
        raise ShapeError(f"invalid shape {shape!r}: use None, an int, or a sequence of ints "
                         "(None for a dimension known only at run time)")
    shape = tuple(shape)
    for dim in shape:
        if not (dim is None or isinstance(dim, numbers.Integral) and not isinstance(dim, bool) and dim >= 0):
            raise ShapeError(f"invalid dimension {dim!r} in shape {shape!r}: "
                             "use a non-negative int, or None for a dimension known only at run time")
    return tuple([None if dim is None else int(dim) for dim in shape])


def is_fully_known(shape):
    """True when the rank and every dimension are known."""
    return shape is not None and all(d is not None for d in shape)


def dims_compatible(a, b):
    """True when two single dimensions may be equal at run time."""
    return a is None or b is None or a == b


def shapes_compatible(a, b):
    """True when two static shapes may describe the same run-time shape."""
    return a is None or b is None or len(a) == len(b) and all(dims_compatible(x, y) for x, y in zip(a, b))


def matches(static_shape, actual_shape):
    """True when a concrete shape fits a static shape."""
    if static_shape is None:
        return True
    if len(static_shape) != len(actual_shape):
        return False
    for static, actual in zip(static_shape, actual_shape):  # a plain loop: every fed value is checked
        if static is not None and static != actual:
            return False
    return True


def broadcast_shapes(*shapes, what="operands"):
    """Numpy's broadcasting rule on static shapes; raises ShapeError on a certain clash."""
    if any(s is None for s in shapes):
        return None
    rank = max((len(s) for s in shapes), default=0)
    result = []
    for axis in range(rank):
        dims = [s[axis - rank + len(s)] for s in shapes if axis - rank + len(s) >= 0]
        known = {d for d in dims if d is not None and d != 1}
        if len(known) > 1:
            raise ShapeError(f"cannot broadcast {what} of shapes "
                             f"{', '.join(str(s) for s in shapes)}: sizes {sorted(known)} clash on axis "
                             f"{axis - rank}")
        result.append(known.pop() if known else None if None in dims else 1)
    return tuple(result)


def can_reduce_to(grad_shape, target_shape):
    """True when summing over broadcast axes could turn grad_shape into target_shape."""
    if grad_shape is None or target_shape is None:
        return True
    if len(grad_shape) < len(target_shape):
        return False
    tail = grad_shape[len(grad_shape) - len(target_shape):]
    return all(dims_compatible(g, t) or t == 1 for g, t in zip(tail, target_shape))


def reduced_shape(shape, axes, keepdims):
    """The static shape left after reducing `axes` (normalized) of `shape`."""
    if keepdims:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes)
