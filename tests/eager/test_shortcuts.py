"""The eager shortcuts give exactly what the generic path gives: values, dtypes, gradients, graphs, errors.

Plain ops on Tensors (and a layer's Variables) skip `Operation.__init__` -> `adopt` -> `run`
(tinyflow/eager/runtime.py); each program here runs once as users write it and once with every
shortcut turned off, and both runs must agree.
"""
import numpy as np
import pytest

import tinyflow as tfl
from tinyflow.eager import runtime
from tinyflow.ops import operators
from tinyflow.ops.elementwise_ops import ElementwiseOp

RNG = np.random.default_rng(7)


def _generic_only(monkeypatch):
    """Turn the shortcuts off: operators call the op functions, the metaclass takes the generic path."""
    monkeypatch.setattr(runtime.EagerRuntime, "call", staticmethod(lambda cls, args, kwargs: None))
    for name, (_, fn) in operators._OP_OPERATORS.items():
        monkeypatch.setattr(tfl.Tensor, name, fn)


def _both_ways(monkeypatch, program):
    """program() run with the shortcuts, then without them."""
    fast = program()
    with monkeypatch.context() as patch:
        _generic_only(patch)
        generic = program()
    return fast, generic


def _assert_same(fast, generic):
    assert fast.keys() == generic.keys()
    for key in fast:
        a, b = fast[key], generic[key]
        if isinstance(a, np.ndarray):
            assert a.dtype == b.dtype and a.shape == b.shape, key
            np.testing.assert_array_equal(a, b, err_msg=key)
        else:
            assert a == b, key


def _values(**tensors):
    out = {}
    for name, t in tensors.items():
        out[name] = t.numpy()
        out[name + " grad_fn"] = None if t.grad_fn is None else t.grad_fn.op_type
        out[name + " requires_grad"] = t.requires_grad
    return out


def _leaf(shape, dtype="float32", requires_grad=True):
    return tfl.tensor(RNG.standard_normal(shape).astype(dtype), requires_grad=requires_grad)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_a_chain_of_plain_ops_and_its_gradients(monkeypatch, dtype):
    x0, c0 = RNG.standard_normal((3, 4)).astype(dtype), RNG.uniform(1, 2, (3, 4)).astype(dtype)

    def program():
        x, c = tfl.tensor(x0, requires_grad=True), tfl.tensor(c0)
        y = -(x * c - c) / c
        y = tfl.exp(y + x) ** c + tfl.multiply(y, x)
        y.sum().backward()
        return {**_values(y=y), "x.grad": x.grad}
    _assert_same(*_both_ways(monkeypatch, program))


def test_broadcasting_operands_and_their_summed_gradients(monkeypatch):
    a0, b0, c0 = (RNG.standard_normal(s).astype(np.float32) for s in ((3, 4), (4,), (3, 1)))

    def program():
        a, b, c = (tfl.tensor(v, requires_grad=True) for v in (a0, b0, c0))
        y = (a + b) * c - tfl.subtract(b, c)
        (y * y).sum().backward()
        return {**_values(y=y), "a.grad": a.grad, "b.grad": b.grad, "c.grad": c.grad}
    fast, generic = _both_ways(monkeypatch, program)
    _assert_same(fast, generic)
    assert fast["y"].shape == (3, 4) and fast["b.grad"].shape == (4,) and fast["c.grad"].shape == (3, 1)


def test_a_layers_variables_next_to_tensors(monkeypatch):
    x0 = RNG.standard_normal((5, 3)).astype(np.float32)

    def program():
        tfl.reset_default_graph()
        np.random.seed(0)
        layer = tfl.nn.Linear(3, 2, act="relu", weight_init=lambda shape, *_: np.linspace(-1, 1, 6).reshape(shape))
        x = tfl.tensor(x0)
        y = layer(x)
        z = layer.bias + y  # Variable on the left, Tensor on the right: the reflected side of the shortcut
        z.sum().backward()
        return {**_values(y=y, z=z), "w.grad": layer.weight.grad, "b.grad": layer.bias.grad}
    _assert_same(*_both_ways(monkeypatch, program))


def test_mixed_dtypes_integers_and_no_grad(monkeypatch):
    def program():
        f32, f64 = _leaf((2, 3)), tfl.tensor(np.ones((2, 3)))
        i32 = tfl.tensor(np.arange(6, dtype=np.int32).reshape(2, 3))
        with tfl.no_grad():
            quiet = f32 + f32
        return _values(mixed=f32 + f64, ints=i32 * i32, quiet=quiet, negated=-i32)
    fast, generic = _both_ways(monkeypatch, program)
    _assert_same({k: v for k, v in fast.items() if "grad" in k}, {k: v for k, v in generic.items() if "grad" in k})
    assert fast["mixed"].dtype == generic["mixed"].dtype == np.float64
    assert fast["ints"].dtype == np.int32 and not fast["ints requires_grad"] and not fast["quiet requires_grad"]


def test_errors_are_the_generic_paths(monkeypatch):
    def clash():
        _leaf((3, 4)) + _leaf((5,))

    def version():
        a, b = _leaf((3,)) * 1, _leaf((3,))
        y = a * b
        a.add_(1)
        y.sum().backward()

    def twice():
        y = _leaf((3,)) * _leaf((3,))
        y.sum().backward()
        y.sum().backward()

    for program, error, pattern in ((clash, tfl.ShapeError, r"cannot broadcast .*\(3, 4\), \(5,\)"),
                                    (version, tfl.TinyflowError, r"Multiply \(created at .*\).*changed in place"),
                                    (twice, tfl.TinyflowError, r"a second time")):
        messages = []
        for shortcuts in (True, False):
            with monkeypatch.context() as patch:
                if not shortcuts:
                    _generic_only(patch)
                with pytest.raises(error, match=pattern) as err:
                    program()
            messages.append(str(err.value).split("(created at")[0])
        assert messages[0] == messages[1]


def test_remembered_shapes_still_check_new_ones():
    a = _leaf((2, 3))
    assert (a @ _leaf((3, 4))).shape == (2, 4)  # MatMul's shape rule, remembered for these shapes
    assert (a @ _leaf((3, 5))).shape == (2, 5)
    with pytest.raises(tfl.ShapeError, match="matmul inner dimensions differ"):
        a @ _leaf((4, 5))
    assert (a + _leaf((3,))).shape == (2, 3)
    with pytest.raises(tfl.ShapeError, match="cannot broadcast"):
        a + _leaf((2,))


class _HalfGradTimes(ElementwiseOp):
    """a * b whose registered gradient is wrong on purpose: the right shape for a, a wrong one for b."""

    input_names = ("a", "b")

    def compute(self, a, b):
        return a * b


@tfl.register_gradient(_HalfGradTimes)
def _half_grad_times_grad(op, grad):
    return [grad, grad[:1]]


def test_a_gradient_of_the_wrong_shape_is_refused_on_both_paths(monkeypatch):
    def program():
        a, b = _leaf((3, 4)), _leaf((3, 4))
        _HalfGradTimes(a, b).sum().backward()

    for shortcuts in (True, False):
        with monkeypatch.context() as patch:
            if not shortcuts:
                _generic_only(patch)
            with pytest.raises(tfl.GradientError, match=r"gradient of shape \(1, 4\) for input 1 \(shape \(3, 4\)\)"):
                program()
