"""tinyflow.testing.gradcheck passes correct gradients and reports the worst element of wrong ones."""
import numpy as np
import pytest

import tinyflow as tfl
from tinyflow.errors import GradientCheckError
from tinyflow.testing import GradcheckInputError, gradcheck


class Cube(tfl.Operation):
    def __init__(self, x, name=None):
        super().__init__(x, name=name)

    def compute(self, x):
        return x ** 3

    def infer_shape(self, s):
        return s


def wrong_cube_gradient():
    """Register a Cube gradient with a wrong factor (2 instead of 3); returns an input whose worst element is 3.0."""
    @tfl.register_gradient(Cube)
    def _grad(op, grad):
        return [grad * 2.0 * op.inputs[0] ** 2]  # wrong factor
    return np.array([[0.1, -0.2], [3.0, 0.5]])


def test_correct_gradient_passes():
    @tfl.register_gradient(Cube)
    def _grad(op, grad):
        return [grad * 3.0 * op.inputs[0] ** 2]
    report = gradcheck(Cube, [np.random.default_rng(0).standard_normal((3, 2))])
    assert report.ok and "passed" in str(report)


def test_wrong_gradient_fails_with_the_worst_element():
    x = wrong_cube_gradient()
    with pytest.raises(GradientCheckError) as err:
        gradcheck(Cube, [x])
    assert "worst element: input 0 index (1, 0)" in str(err.value)
    report = gradcheck(Cube, [x], raise_on_failure=False)
    assert not report.ok and report.worst["index"] == (1, 0)
    assert report.worst["analytic"] == pytest.approx(report.worst["numeric"] * 2 / 3, rel=1e-4)


def test_failure_names_the_op_and_the_input_value_at_the_worst_element():
    x = wrong_cube_gradient()
    with pytest.raises(GradientCheckError) as err:
        gradcheck(Cube, [x])
    message = str(err.value)
    assert "gradcheck of Cube node 'Cube' FAILED" in message
    assert "index (1, 0) (input value 3)" in message
    assert "registered for: Cube" in message


def test_integer_inputs_are_refused_instead_of_passing_unchecked():
    @tfl.register_gradient(Cube)
    def _grad(op, grad):
        return [grad * 0.0]  # wrong, and an integer input would hide it
    with pytest.raises(GradcheckInputError, match=r"input 0: int64.*astype\(np.float64\)"):
        gradcheck(Cube, [np.array([1, 2, 3])])
    with pytest.raises(GradientCheckError):  # the same values as floats are checked, and fail
        gradcheck(Cube, [np.array([1.0, 2.0, 3.0])])


def test_integer_labels_next_to_float_inputs_are_fed_but_not_checked():
    logits, labels = np.random.default_rng(0).standard_normal((4, 3)), np.array([0, 2, 1, 2])
    report = gradcheck(tfl.nn.softmax_cross_entropy, [logits, labels])
    assert report.ok and "SoftmaxCrossEntropy" in str(report)
    assert report.fed_only == (1,) and "integer input(s) 1 fed but not checked" in str(report)
