"""Matrix products: matmul (batched over leading axes like numpy's `@`) and einsum; triangular masks
(tril, triu); outer and diag built of other ops."""
import string

import numpy as np

from ..arguments import Arguments, rank_of
from ..errors import ShapeError
from ..nodes import Operation, as_node
from ..shapes import broadcast_shapes, dims_compatible
from .array_ops import Transpose, checks, get_item, reshape
from .elementwise_ops import OnesLike, multiply, where
from .pad import pad
from .registry import register_gradient
from .shape_ops import Unsqueeze


class MatMul(Operation):
    """a @ b for a (..., n, k) and b (..., k, m); leading axes broadcast.  Gradient: (g @ bᵀ, aᵀ @ g)."""

    def __init__(self, a, b, name=None):
        super().__init__(a, b, name=name)

    def compute(self, a, b):
        return np.matmul(a, b)

    def infer_shape(self, a_shape, b_shape):
        for shape in (a_shape, b_shape):
            if shape is None or len(shape) < 2:
                raise ShapeError(f"needs operands of rank 2 or more, got shapes {a_shape} and {b_shape}; "
                                 "tfl.matmul takes vectors (as numpy's @), or reshape one to (1, n) or (n, 1)")
        if not dims_compatible(a_shape[-1], b_shape[-2]):
            raise ShapeError(f"matmul inner dimensions differ: {a_shape} @ {b_shape} "
                             f"({a_shape[-1]} != {b_shape[-2]}); the last axis of the left operand must "
                             "equal the second-to-last axis of the right one (transpose one of them?)")
        batch = broadcast_shapes(a_shape[:-2], b_shape[:-2], what="matmul batch axes")
        return batch + (a_shape[-2], b_shape[-1])


def matmul(a, b, name=None):
    """Matrix product a @ b, batched over broadcast leading axes; a 1-D operand is a vector (as numpy's @)."""
    a_rank, b_rank = rank_of(a), rank_of(b)
    if a_rank != 1 and b_rank != 1:
        return MatMul(a, b, name=name)
    product = MatMul(reshape(a, (1, -1)) if a_rank == 1 else a, reshape(b, (-1, 1)) if b_rank == 1 else b)
    if b_rank == 1:
        product = _drop_axis(product, -1, None if a_rank == 1 else name)
    return _drop_axis(product, -2 if b_rank != 1 else -1, name) if a_rank == 1 else product


def _drop_axis(y, axis, name):
    """y without its size-1 axis `axis`: a reshape when at most one size is unknown, else indexing."""
    shape = list(y.shape)
    del shape[axis]
    if shape.count(None) <= 1:
        return reshape(y, tuple(-1 if d is None else d for d in shape), name=name)
    return get_item(y, (Ellipsis, 0) + (slice(None),) * (-axis - 1), name=name)


def swap_last_axes(x):
    """x with its last two axes swapped."""
    rank = len(x.shape)
    return Transpose(x, tuple(range(rank - 2)) + (rank - 1, rank - 2))


def _batch_first(x, rank):
    """x (..., r, c) as (r, (...)·c): its row axis first, the batch folded into the columns."""
    return reshape(Transpose(x, (rank - 2,) + tuple(range(rank - 2)) + (rank - 1,)), (x.shape[-2], -1))


@register_gradient(MatMul)
def _matmul_grad(op, grad):
    """(g @ bᵀ, aᵀ @ g). A 2-D operand times a batch (a layer's weight) gets one product over the whole batch, the
    batch folded into the contraction: a product per batch entry, summed afterwards, made a (batch, k, m) array."""
    a, b = op.inputs
    a_rank, b_rank = rank_of(a), rank_of(b)
    grads = [MatMul(grad, swap_last_axes(b)), MatMul(swap_last_axes(a), grad)]
    if b_rank == 2 and a_rank is not None and a_rank > 2 and None not in b.shape:
        grads[1] = MatMul(swap_last_axes(reshape(a, (-1, b.shape[0]))), reshape(grad, (-1, b.shape[1])))
    elif a_rank == 2 and b_rank is not None and b_rank > 2 and None not in a.shape:
        grads[0] = MatMul(_batch_first(grad, b_rank), swap_last_axes(_batch_first(b, b_rank)))
    return grads


LETTERS = string.ascii_letters


def _parse(check, equation, ranks):
    """(operand subscripts, output subscripts) with '...' spelled out as letters, from an einsum equation."""
    def fail(problem):
        check.fail("equation", equation, problem, "write e.g. 'ij,jk->ik' (letters, one term per operand)")
    if not isinstance(equation, str):
        fail("is not a string")
    text = equation.replace(" ", "")
    lhs, arrow, rhs = text.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(ranks):
        fail(f"has {len(terms)} operand terms for {len(ranks)} operands")
    if any(not set(t.replace("...", "")) <= set(LETTERS) for t in terms + [rhs]) or "." in rhs.replace("...", ""):
        fail("holds characters that are not letters or '...'")
    free = [c for c in LETTERS if c not in text]
    widest, spelled = 0, []
    for term, rank in zip(terms, ranks):
        if "..." in term:
            if rank is None:
                fail("has '...' on an operand of unknown rank")
            extra = rank - len(term.replace("...", ""))
            if extra < 0:
                fail(f"names more axes than the operand's rank {rank}")
            widest = max(widest, extra)
            term = term.replace("...", "".join(free[len(free) - extra:]))
        elif rank is not None and len(term) != rank:
            fail(f"gives '{term}' {len(term)} subscripts for an operand of rank {rank}")
        spelled.append(term)
    ellipsis = "".join(free[len(free) - widest:])
    if arrow:
        out = rhs.replace("...", ellipsis)
    else:  # implicit output: the ellipsis axes, then the letters used once, alphabetically
        counts = "".join(spelled)
        out = ellipsis + "".join(sorted(c for c in set(counts) if counts.count(c) == 1 and c not in ellipsis))
    if len(set(out)) != len(out) or not set(out) <= set("".join(spelled)):
        fail("has an output subscript that repeats or appears in no operand")
    return spelled, out


class Einsum(Operation):
    """np.einsum(equation, *operands): sums of products over the subscripts missing from the output."""

    def __init__(self, *operands, equation, name=None):
        check = Arguments(self, name, *operands)
        if not operands:
            check.fail("operands", operands, "is empty", "pass one or more operands")
        self.equation = equation
        self.terms, self.output = _parse(check, equation, [rank_of(x) for x in operands])
        self.spelled = f"{','.join(self.terms)}->{self.output}"
        super().__init__(*operands, name=name)

    def compute(self, *operands):
        return np.einsum(self.spelled, *operands, optimize=len(operands) > 1)

    def infer_shape(self, *shapes):
        sizes = {}
        for term, shape in zip(self.terms, shapes):
            for letter, size in zip(term, shape or (None,) * len(term)):
                known = sizes.get(letter)
                if size is not None and known is not None and known != size and 1 not in (size, known):
                    raise ShapeError(f"einsum '{self.equation}': subscript '{letter}' is {known} in one place "
                                     f"and {size} in another")
                if size is not None and (known is None or known == 1):
                    sizes[letter] = size
        return tuple(sizes.get(letter) for letter in self.output)


def einsum(equation, *operands, name=None):
    """np.einsum / torch.einsum: e.g. einsum('bij,bjk->bik', a, b)."""
    return Einsum(*operands, equation=equation, name=name)


@register_gradient(Einsum)
def _einsum_grad(op, grad):
    # operand i's gradient contracts g with the other operands onto its subscripts; the subscripts only it has
    # (summed away) come back by a ones-like operand, a repeated one (a diagonal, "ii->i") by an identity matrix
    grads = []
    for i, (x, term) in enumerate(zip(op.inputs, op.terms)):
        if x.dtype.kind != "f":
            grads.append(None)
            continue
        terms = [op.output] + [t for j, t in enumerate(op.terms) if j != i]
        operands = [grad] + [y for j, y in enumerate(op.inputs) if j != i]
        target = ""
        for k, letter in enumerate(term):
            if letter in target:  # a diagonal: a fresh letter, tied to the first by an identity matrix
                size = x.shape[k] if x.shape is not None else None
                if size is None:
                    raise ShapeError(f"the gradient of einsum '{op.equation}' needs the size of its diagonal axis "
                                     f"{k} of '{x.name}'; give the operand a static shape")
                fresh = next(c for c in LETTERS if c not in "".join(terms) + term + target)
                terms.append(letter + fresh)
                operands.append(as_node(np.eye(size, dtype=x.dtype), like=grad))
                letter = fresh
            target += letter
        if not set(target) <= set("".join(terms)):  # subscripts only x had: a ones operand brings them back
            terms.append(target)
            operands.append(OnesLike(x))
        grads.append(Einsum(*operands, equation=f"{','.join(terms)}->{target}"))
    return grads


class Triangle(Operation):
    """The lower (tril) or upper (triu) triangle of the last two axes from diagonal k (> 0: up), zeros elsewhere."""

    def __init__(self, x, k=0, upper=False, name=None):
        check = Arguments(self, name, x)
        self.k = check.integer("k", k)
        self.upper = check.flag("upper", upper)
        if rank_of(x) is not None and rank_of(x) < 2:
            check.fail("x", getattr(x, "shape", None), "has fewer than 2 axes", "pass a matrix or a batch of them")
        super().__init__(x, name=name)

    def compute(self, x):
        return np.triu(x, self.k) if self.upper else np.tril(x, self.k)


def tril(x, k=0, name=None):
    """The lower triangle of the last two axes (at and below diagonal k), zeros above (np.tril)."""
    return Triangle(x, k, upper=False, name=name)


def triu(x, k=0, name=None):
    """The upper triangle of the last two axes (at and above diagonal k), zeros below (np.triu)."""
    return Triangle(x, k, upper=True, name=name)


register_gradient(Triangle)(lambda op, grad: [Triangle(grad, op.k, op.upper)])


def outer(a, b, name=None):
    """The outer product of two vectors: a (n,) and b (m,) give (n, m), entries a_i b_j (torch.outer)."""
    check = checks("outer", name, *(v for v in (a, b) if hasattr(v, "shape")))
    for argument, v in (("a", a), ("b", b)):
        if rank_of(v) not in (1, None):
            check.fail(argument, f"an input of rank {rank_of(v)}", "is not a vector", "flatten it first")
    return multiply(Unsqueeze(a, 1), Unsqueeze(b, 0), name=name)


def diag(x, k=0, name=None):
    """A vector's square matrix with x on diagonal k, or a matrix's diagonal k as a vector (torch.diag)."""
    x = as_node(x)
    check = checks("diag", name, x)
    k = check.integer("k", k)
    if rank_of(x) not in (1, 2) or None in x.shape:
        check.fail("x", x.shape, "is not a vector or a matrix of known shape", "pass a 1-D or 2-D input")
    top, left = max(-k, 0), max(k, 0)
    if len(x.shape) == 2:  # the entries (i, i + k)
        count = max(0, min(x.shape[0] - top, x.shape[1] - left))
        return get_item(x, (np.arange(count) + top, np.arange(count) + left), name=name)
    square = where(np.eye(x.shape[0], dtype=bool), Unsqueeze(x, 1), np.zeros((), x.dtype))  # x · I, but inf · 0 = 0
    return pad(square, ((top, left), (left, top)), name=name)
