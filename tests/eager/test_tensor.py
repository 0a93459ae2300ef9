"""Tensors: creation, values, every public op computing at once on the active backend, readable errors."""
import re

import numpy as np
import pytest

import tinyflow as tfl


def test_tensor_holds_a_copy_with_shape_dtype_and_numpy():
    data = np.arange(6.0).reshape(2, 3)
    t = tfl.tensor(data)
    data[0, 0] = 100
    assert isinstance(t, tfl.Tensor) and t.shape == (2, 3) and t.dtype == np.float64 and t.ndim == 2
    assert t.numpy()[0, 0] == 0 and np.asarray(t).dtype == np.float64
    assert tfl.tensor([[1.0, 2.0]]).dtype == np.float32  # Python floats are float32, numpy keeps its dtype
    assert tfl.tensor([1, 2]).dtype == np.int64 and tfl.tensor(data, dtype="float64").dtype == np.float64
    assert t.is_leaf and not t.requires_grad and t.grad is None and t.grad_fn is None


def test_repr_reads_like_pytorch():
    t = tfl.tensor([1.0, 2.0], requires_grad=True)
    assert repr(t) == "tensor([1., 2.], requires_grad=True)"
    assert repr(t * 2) == "tensor([2., 4.], grad_fn=<Multiply>)"
    assert "dtype=int64" in repr(tfl.tensor([1, 2]))


def test_arithmetic_and_comparisons_compute_at_once():
    a, b = tfl.tensor([1.0, 2.0, 3.0]), tfl.tensor([3.0, 2.0, 1.0])
    np.testing.assert_allclose((a + b * 2 - 1 / a).numpy(), [6.0, 5.5, 4 + 2 / 3], rtol=1e-6)
    np.testing.assert_allclose((2 ** a).numpy(), [2, 4, 8])
    np.testing.assert_allclose((-a).numpy(), [-1, -2, -3])
    assert (a < b).numpy().tolist() == [True, False, False] and (a >= b).dtype == np.bool_
    np.testing.assert_allclose((np.ones(3) + a).numpy(), [2, 3, 4])


def test_indexing_and_shape_ops():
    t = tfl.tensor(np.arange(12.0).reshape(3, 4))
    np.testing.assert_allclose(t[1].numpy(), [4, 5, 6, 7])
    np.testing.assert_allclose(t[:, 1:3].numpy(), np.arange(12.0).reshape(3, 4)[:, 1:3])
    assert t.T.shape == (4, 3) and t.reshape(2, 6).shape == (2, 6) and tfl.reshape(t, (-1,)).shape == (12,)
    assert tfl.concat([t, t], 0).shape == (6, 4) and len(t) == 3 and [r.shape for r in t] == [(4,)] * 3


def test_every_public_op_function_accepts_tensors():
    rng = np.random.default_rng(0)
    x = tfl.tensor(rng.standard_normal((2, 3)))
    img = tfl.tensor(rng.standard_normal((1, 2, 4, 4)))
    w = tfl.tensor(rng.standard_normal((3, 2, 3, 3)))
    outs = [tfl.exp(x), tfl.log(tfl.abs(x) + 1), tfl.sqrt(tfl.square(x)), tfl.sigmoid(x), tfl.tanh(x),
            tfl.relu(x), tfl.leaky_relu(x, 0.1), tfl.softplus(x), tfl.softmax(x), tfl.log_softmax(x),
            tfl.reduce_sum(x, 1), tfl.reduce_mean(x), tfl.reduce_max(x, 0), tfl.argmax(x),
            tfl.matmul(x, x.T), tfl.maximum(x, 0.0), tfl.minimum(x, 0.0), tfl.where(x > 0, x, 0.0),
            tfl.transpose(x), tfl.identity(x), tfl.stop_gradient(x), tfl.add_n([x, x]), tfl.cast(x, "float64"),
            tfl.conv2d(img, w, padding=1), tfl.max_pool2d(img, 2), tfl.avg_pool2d(img, 2),
            tfl.nn.mse_loss(x, x * 0), tfl.nn.softmax_cross_entropy(x, np.array([0, 2])),
            tfl.nn.sigmoid_cross_entropy(x, np.ones((2, 3))), tfl.dropout(x, 0.5), tfl.sign(x),
            tfl.zeros_like(x), tfl.ones_like(x), tfl.equal(x, x)]
    assert all(isinstance(o, tfl.Tensor) for o in outs)
    np.testing.assert_allclose(outs[0].numpy(), np.exp(x.numpy()), rtol=1e-6)
    assert outs[23].shape == (1, 3, 4, 4) and outs[24].shape == (1, 2, 2, 2)
    assert len(tfl.get_default_graph().nodes) == 0  # eager ops build no graph


def test_large_arrays_run_the_backend_kernels_with_the_same_values():
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((128, 64)), rng.standard_normal((64, 96))
    out = tfl.relu(tfl.tensor(a, dtype="float64") @ tfl.tensor(b, dtype="float64")).sum(1)
    np.testing.assert_allclose(out.numpy(), np.maximum(a @ b, 0).sum(1), rtol=1e-10)


def test_shape_errors_name_the_op_and_the_shapes():
    with pytest.raises(tfl.ShapeError, match=r"MatMul.*\(2, 3\).*\(2, 3\)"):
        tfl.matmul(tfl.tensor(np.ones((2, 3))), tfl.tensor(np.ones((2, 3))))
    with pytest.raises(tfl.ShapeError, match="broadcast"):
        tfl.tensor(np.ones(3)) + tfl.tensor(np.ones(4))


def test_tensor_meets_graph_node_as_a_constant():
    x = tfl.Placeholder((3,), "float32")
    y = x + tfl.tensor([1.0, 2.0, 3.0])
    assert isinstance(y, tfl.Node)
    with tfl.Session() as sess:
        np.testing.assert_allclose(sess.run(y, {x: np.zeros(3)}), [1, 2, 3])


def test_variable_next_to_a_tensor_is_an_eager_leaf():
    w = tfl.Variable(np.array([1.0, 2.0], np.float32), name="w")
    y = (w * tfl.tensor([3.0, 4.0])).sum()
    assert isinstance(y, tfl.Tensor)
    y.backward()
    np.testing.assert_allclose(w.grad, [3, 4])
    assert isinstance(w * 2.0, tfl.Node)  # a Variable alone still builds graph nodes


def test_numpy_ufuncs_on_tensors():
    t = tfl.tensor([0.0, 1.0])
    np.testing.assert_allclose(np.exp(t), [1, np.e], rtol=1e-6)
    with pytest.raises(tfl.TinyflowError, match="tfl.exp"):
        np.exp(tfl.tensor([1.0], requires_grad=True))


def test_set_backend_chooses_where_eager_ops_run():
    backend = tfl.eager.set_backend("numpy")
    assert backend.name == "numpy" and tfl.eager.get_backend() is backend
    with pytest.raises(tfl.BackendError):
        tfl.eager.set_backend("nonsense")


def test_a_tensor_that_is_not_one_integer_used_as_an_int_raises_an_argument_error_naming_it():
    """list[t], range(t), tfl.range(t) and len(scalar) raise tinyflow's ArgumentError (still a TypeError, as Python's
    protocols expect), naming the tensor's shape and dtype; a tensor of one integer works as an int."""
    for bad in (tfl.tensor([1, 2]), tfl.tensor(1.5)):
        for use in (lambda t: [0, 1, 2][t], range, tfl.range):
            with pytest.raises(tfl.ArgumentError, match=re.escape(f"shape {bad.shape} and dtype {bad.dtype}")):
                use(bad)
    with pytest.raises(tfl.ArgumentError, match="0-d tensor"):
        len(tfl.tensor(1.0))
    assert list(tfl.range(tfl.tensor(3))) == [0, 1, 2] and [5, 6, 7][tfl.tensor([1])] == 6
