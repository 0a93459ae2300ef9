"""Registry-driven: every op type has a gradient (or is marked non-differentiable) and passes gradcheck."""
import numpy as np
import pytest

import tinyflow as tfl
from op_cases import CASES, all_cases
from tinyflow.autodiff.registry import NOT_DIFFERENTIABLE, registered_op_types
from tinyflow.nodes import OP_TYPES
from tinyflow.testing import gradcheck

TINYFLOW_OPS = {t: cls for t, cls in OP_TYPES.items() if cls.__module__.startswith("tinyflow.")}


def test_every_op_type_has_a_gradient_or_is_marked_non_differentiable():
    registered = registered_op_types()
    assert [t for t in TINYFLOW_OPS if t not in registered] == []


def test_every_differentiable_op_type_has_a_gradcheck_case():
    registered = registered_op_types()
    differentiable = {t for t in TINYFLOW_OPS if registered[t] is not NOT_DIFFERENTIABLE}
    assert sorted(differentiable - set(CASES)) == []
    assert sorted(set(CASES) - set(TINYFLOW_OPS)) == []  # no stale cases either


@pytest.mark.parametrize("case", [c for _, c in all_cases()], ids=[i for i, _ in all_cases()])
def test_gradient_matches_finite_differences(case):
    gradcheck(case.build, case.inputs, **case.options)


@pytest.mark.parametrize("case", [c for _, c in all_cases()], ids=[i for i, _ in all_cases()])
def test_static_shape_and_dtype_match_the_computed_value(case):
    placeholders = [tfl.Placeholder(v.shape, v.dtype) for v in case.inputs]
    out = case.build(*placeholders)
    with tfl.Session() as sess:
        value = np.asarray(sess.run(out, dict(zip(placeholders, case.inputs))))
    assert tfl.shapes.matches(out.shape, value.shape), (out.shape, value.shape)
    assert value.dtype == out.dtype


@pytest.mark.parametrize("case", [c for _, c in all_cases()], ids=[i for i, _ in all_cases()])
def test_shape_inference_with_unknown_batch_dimension(case):
    """Building every op on inputs whose first dimension is None works and stays compatible."""
    placeholders = [tfl.Placeholder((None,) + v.shape[1:] if v.ndim else (), v.dtype) for v in case.inputs]
    out = case.build(*placeholders)
    with tfl.Session() as sess:
        value = np.asarray(sess.run(out, dict(zip(placeholders, case.inputs))))
    assert tfl.shapes.matches(out.shape, value.shape), (out.shape, value.shape)
