"""tinyflow.testing.gradcheck passes correct gradients and reports the worst element of wrong ones."""
import numpy as np
import pytest

import tinyflow as tfl
from tinyflow.errors import GradientCheckError
from tinyflow.testing import gradcheck


class Cube(tfl.Operation):
    def __init__(self, x, name=None):
        super().__init__(x, name=name)

    def compute(self, x):
        return x ** 3

    def infer_shape(self, s):
        return s


def test_correct_gradient_passes():
    @tfl.register_gradient(Cube)
    def _grad(op, grad):
        return [grad * 3.0 * op.inputs[0] ** 2]
    report = gradcheck(Cube, [np.random.default_rng(0).standard_normal((3, 2))])
    assert report.ok and "passed" in str(report)


def test_wrong_gradient_fails_with_the_worst_element():
    @tfl.register_gradient(Cube)
    def _grad(op, grad):
        return [grad * 2.0 * op.inputs[0] ** 2]  # wrong factor
    x = np.array([[0.1, -0.2], [3.0, 0.5]])
    with pytest.raises(GradientCheckError) as err:
        gradcheck(Cube, [x])
    assert "worst element: input 0 index (1, 0)" in str(err.value)
    report = gradcheck(Cube, [x], raise_on_failure=False)
    assert not report.ok and report.worst["index"] == (1, 0)
    assert report.worst["analytic"] == pytest.approx(report.worst["numeric"] * 2 / 3, rel=1e-4)
