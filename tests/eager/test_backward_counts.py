"""Backward's first guess of how many contributions an op waits for (how many recorded ops took its output)
gives the exact walk's gradients in every graph shape, including ops that also fed something the roots
never reach (the walk then counts the rest exactly)."""
import numpy as np
import pytest

import tinyflow as tfl
from tinyflow.eager.autograd import backward
from tinyflow.ops.elementwise_ops import ElementwiseOp

RNG = np.random.default_rng(11)
X = RNG.uniform(0.5, 1.5, (3, 4)).astype(np.float64)
W = RNG.uniform(0.5, 1.5, (3, 4)).astype(np.float64)


class _FirstOnly(ElementwiseOp):
    """a + b whose gradient reaches a only: b gets a None contribution."""

    input_names = ("a", "b")

    def compute(self, a, b):
        return a + b


@tfl.register_gradient(_FirstOnly)
def _first_only_grad(op, grad):
    return [grad, None]


def _dead_branch(x, w):
    y = x * w
    dead = y + 1.0  # recorded, never reaches the loss  # noqa: F841
    return [(y * 3.0).sum()]


def _root_used_afterwards(x, w):
    loss = (x * w).sum()
    total = loss + 1.0  # the root fed another recorded op  # noqa: F841
    return [loss]


def _diamond_with_a_dead_branch_deep_inside(x, w):
    a = x * w
    b = a + a
    c = tfl.exp(a)
    dead = c * 2.0  # noqa: F841
    return [(b * c).sum()]


def _one_root_inside_the_others_graph(x, w):
    y = (x * w).sum()
    return [y, y * 2.0]


def _none_contribution_to_an_op_with_a_dead_branch(x, w):
    b = x * w
    dead = tfl.exp(b)  # noqa: F841
    return [_FirstOnly(x * 2.0, b).sum()]


def _shared_subgraph_feeding_two_dead_ends(x, w):
    h = tfl.tanh(x * w)
    k = h * h
    dead_1, dead_2 = k + 1.0, h - 1.0  # noqa: F841
    return [(k * x).sum() + h.sum()]


PROGRAMS = [_dead_branch, _root_used_afterwards, _diamond_with_a_dead_branch_deep_inside,
            _one_root_inside_the_others_graph, _none_contribution_to_an_op_with_a_dead_branch,
            _shared_subgraph_feeding_two_dead_ends]


def _gradients(program, exact):
    x, w = tfl.tensor(X, requires_grad=True), tfl.tensor(W, requires_grad=True)
    roots = program(x, w)
    # a trace makes backward count every op's consumers exactly before it starts
    backward(roots, trace=(lambda step: None) if exact else None)
    return x.grad, w.grad


@pytest.mark.parametrize("program", PROGRAMS, ids=[p.__name__.strip("_") for p in PROGRAMS])
def test_the_first_guess_gives_the_exact_walks_gradients(program):
    guessed, exact = _gradients(program, exact=False), _gradients(program, exact=True)
    assert guessed[0] is not None
    for got, want in zip(guessed, exact):
        if want is None:  # no gradient reaches w (_FirstOnly gives none to its second input)
            assert got is None
        else:
            np.testing.assert_allclose(got, want, rtol=1e-12)


def test_against_hand_derived_gradients():
    x, w = tfl.tensor(X, requires_grad=True), tfl.tensor(W, requires_grad=True)
    backward(_diamond_with_a_dead_branch_deep_inside(x, w))
    a = X * W
    d_a = 2 * np.exp(a) + 2 * a * np.exp(a)  # loss = sum(2a * e^a)
    np.testing.assert_allclose(x.grad, d_a * W, rtol=1e-12)
    np.testing.assert_allclose(w.grad, d_a * X, rtol=1e-12)


def test_retained_graphs_and_second_derivatives():
    x = tfl.tensor(X, requires_grad=True)
    y = x * x * x
    loss = y.sum()
    loss.backward(retain_graph=True)
    loss.backward()  # the same guesses again
    np.testing.assert_allclose(x.grad, 2 * 3 * X ** 2, rtol=1e-12)
    x.grad = None
    y = x * x * x
    (g,) = tfl.eager.grad(y.sum(), [x], create_graph=True)  # records ops taking y's inputs' outputs
    g.sum().backward()
    np.testing.assert_allclose(g.numpy(), 3 * X ** 2, rtol=1e-12)
    np.testing.assert_allclose(x.grad, 6 * X, rtol=1e-12)


def test_a_freed_op_behind_a_dead_branch_still_raises():
    x = tfl.tensor(X, requires_grad=True)
    a = x * 2.0
    (a * 3.0).sum().backward()
    with pytest.raises(tfl.TinyflowError, match="a second time"):
        (a * 4.0).sum().backward()
