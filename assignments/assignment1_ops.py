"""Assignment 1 — forward ops and static shapes.

A tinyflow op is a class: `infer_shape` says, while the graph is built, what shape the output
will have (None = a dimension known only at run time, e.g. the batch), and `compute` does the
arithmetic in numpy when a Session runs it. Fill in every TODO; check yourself with
`pytest tests -m assignment1`.
"""
import numpy as np

import tinyflow as tfl


def broadcast_shape(a, b):
    """The static shape of `x + y` for x of shape `a` and y of shape `b` (tuples; None = unknown).

    numpy's rule, from the last axis backwards: equal sizes stay, a 1 stretches to the other size,
    a missing axis counts as 1. With unknowns: (None, 1) -> None; (None, n) -> n for n > 1
    (the None must be 1 or n at run time); (None, None) -> None. Other pairs raise tfl.ShapeError.
    """
    # BEGIN SOLUTION
    # HINT: pad the shorter tuple with 1s on the left, then decide each axis from the pair (da, db); raise
    #   tfl.ShapeError naming both shapes when two known sizes > 1 differ
    a, b = tuple(a), tuple(b)
    width = max(len(a), len(b))
    a, b = (1,) * (width - len(a)) + a, (1,) * (width - len(b)) + b
    out = []
    for da, db in zip(a, b):
        if da == 1:
            out.append(db)
        elif db == 1 or da == db:
            out.append(da)
        elif da is None:
            out.append(db)
        elif db is None:
            out.append(da)
        else:
            raise tfl.ShapeError(f"shapes {a} and {b} cannot be broadcast: sizes {da} and {db} differ")
    return tuple(out)
    # END SOLUTION


def reduced_shape(shape, axis=None, keepdims=False):
    """The static shape of reduce_sum(x, axis, keepdims) for x of shape `shape`.

    `axis` is None (every axis), an int or a tuple of ints, negative ones counting from the end.
    A reduced axis disappears, or becomes 1 with keepdims. An axis out of range raises tfl.ShapeError.
    """
    # BEGIN SOLUTION
    # HINT: normalise axis to a set of non-negative ints (None means all of range(len(shape)); -1 means
    #   len(shape) - 1), check the range, then rebuild the tuple axis by axis
    rank = len(shape)
    axes = range(rank) if axis is None else (axis,) if isinstance(axis, int) else axis
    normalized = set()
    for ax in axes:
        if not -rank <= ax < rank:
            raise tfl.ShapeError(f"axis {ax} is out of range for a shape of rank {rank}: {tuple(shape)}")
        normalized.add(ax % rank)
    return tuple(1 if i in normalized else d for i, d in enumerate(shape) if keepdims or i not in normalized)
    # END SOLUTION


class Hardtanh(tfl.Operation):
    """clip(x, -1, 1), elementwise: the output has the input's shape."""

    op_type = "StudentHardtanh"  # tinyflow has a Hardtanh of its own: an op type names one op
    def __init__(self, x, name=None):
        super().__init__(x, name=name)

    def compute(self, x):
        # BEGIN SOLUTION
        # HINT: one numpy call does it (np.clip); keep the input's dtype
        return np.clip(x, -1, 1)
        # END SOLUTION

    def infer_shape(self, x_shape):
        # BEGIN SOLUTION
        # HINT: an elementwise op keeps its input's shape
        return x_shape
        # END SOLUTION


class Outer(tfl.Operation):
    """The outer product of two vectors: (n,) and (m,) give (n, m), out[i, j] = a[i] * b[j]."""

    op_type = "StudentOuter"
    def __init__(self, a, b, name=None):
        super().__init__(a, b, name=name)

    def compute(self, a, b):
        # BEGIN SOLUTION
        # HINT: a[:, None] * b[None, :] (or np.outer)
        return a[:, None] * b[None, :]
        # END SOLUTION

    def infer_shape(self, a_shape, b_shape):
        # BEGIN SOLUTION
        # HINT: both inputs must be 1-D (else raise tfl.ShapeError saying which one is not); the sizes may be
        #   None
        for which, shape in (("first", a_shape), ("second", b_shape)):
            if len(shape) != 1:
                raise tfl.ShapeError(f"Outer takes two vectors; the {which} input has shape {shape}. "
                                     "Reshape it to 1-D first (tfl.reshape(x, (-1,))).")
        return (a_shape[0], b_shape[0])
        # END SOLUTION


def normalize_rows(x):
    """A graph (built from tinyflow ops) dividing each row of the 2-D node `x` by its sum."""
    # BEGIN SOLUTION
    # HINT: tfl.reduce_sum(x, axis=1, keepdims=True) has shape (N, 1) and broadcasts against (N, M)
    return x / tfl.reduce_sum(x, axis=1, keepdims=True)
    # END SOLUTION
