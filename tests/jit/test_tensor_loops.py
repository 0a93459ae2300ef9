"""Tensor for-loops inside to_static: tfl.range, rows of a tensor, enumerate, zip, lists that collect values."""
import numpy as np
import pytest

import tinyflow as tfl
from tinyflow.jit import ConversionError, InputSpec

from test_escapes import check_against_eager


def weighted_rows(x, n):
    total = x[0] * 0.0
    for i in tfl.range(n):                  # n a tensor: a while_loop
        total = total + x[i] * 2.0
    for k, row in enumerate(x):             # enumerate of a tensor
        if k > 0:
            total = total - row * 0.5
    for a, b in zip(x, x[1:]):              # zip of two tensors stops at the shorter
        total = total + a * b
    return total


def test_range_enumerate_and_zip_over_tensors():
    f = tfl.jit.to_static(weighted_rows)
    x = np.arange(12, dtype=np.float32).reshape(4, 3) / 10
    for n in (0, 2, 4):
        expected = sum(2 * x[i] for i in range(n)) - 0.5 * x[1:].sum(0) + (x[:-1] * x[1:]).sum(0)
        np.testing.assert_allclose(f(x, np.array(n)).numpy(), expected, rtol=1e-6, atol=1e-6)
    assert len(f.concrete_programs) == 1  # one program: the loops run in the graph
    assert sum(node.op_type == "WhileLoop" for node in f.concrete_programs[0].graph.nodes) == 3


def test_tfl_range_is_pythons_range_for_ints_and_refuses_iteration_outside_to_static():
    assert list(tfl.range(5)) == [0, 1, 2, 3, 4] and list(tfl.range(1, 7, 2)) == [1, 3, 5]
    assert list(tfl.range(tfl.tensor(np.array(3)))) == [0, 1, 2]  # an eager Tensor has its value
    with pytest.raises(tfl.TinyflowError, match="to_static"):
        iter(tfl.range(tfl.Placeholder((), "int64")))


def rnn_collect(xs, w):
    h = xs[0] * 0.0
    outputs = []
    for x in xs:                            # the rows of a (T, B, D) tensor
        h = tfl.tanh(h * w + x)
        outputs.append(h)                   # collected per iteration, as TF's TensorArray
    return tfl.reduce_sum(tfl.concat(outputs, 0) ** 2) + tfl.reduce_sum(tfl.stack(outputs)[-1])


def test_a_list_appended_in_a_tensor_loop_becomes_a_stacked_tensor_with_gradients():
    rng = np.random.default_rng(0)
    check_against_eager(rnn_collect, rng.standard_normal((5, 2, 3)).astype(np.float32),
                        np.array([0.5, -0.3, 0.8], np.float32))


def downward(n):
    values = []
    for i in tfl.range(n, 0, -2):           # a negative step
        values.append(tfl.cast(i, "float32"))
    return tfl.add_n(values) + tfl.cast(len(values), "float32") * 100.0


def test_a_negative_range_step_and_len_of_a_collected_list():
    f = tfl.jit.to_static(downward)
    assert float(f(np.array(7))) == pytest.approx(7 + 5 + 3 + 1 + 400)
    assert float(f(np.array(0))) == pytest.approx(0.0)


def zips_a_list(x):
    total = x[0]
    for a, b in zip(x, [1.0, 2.0]):
        total = total + a * b
    return total


def test_zip_of_a_tensor_and_a_python_list_is_a_conversion_error():
    with pytest.raises(ConversionError, match="zip"):
        tfl.jit.to_static(zips_a_list)(np.ones((2, 3), np.float32))


def test_the_new_forms_survive_jit_save_and_load(tmp_path):
    from test_escapes import first_big_row, halve_until, skip_negative_rows

    def model(x):
        row = first_big_row(x)[0]
        return row + halve_until(row) + skip_negative_rows(x) + rnn_collect(x[:, None, :], row * 0.1)
    f = tfl.jit.to_static(model, input_spec=[InputSpec([None, 3], "float32", "x")])
    tfl.jit.save(f, tmp_path / "model")
    loaded = tfl.jit.load(tmp_path / "model")
    for data in ([[0.5, 0.2, 0.1], [3.0, -1.0, 2.0], [2.0, 2.0, 0.0]], [[0.5, 0.2, 0.3]]):
        data = np.array(data, np.float32)
        np.testing.assert_allclose(loaded(data), f(data).numpy(), rtol=1e-6)
