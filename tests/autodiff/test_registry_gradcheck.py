"""Registry-driven: every op type has a gradient (or is marked non-differentiable) and passes gradcheck."""
import numpy as np
import pytest

import tinyflow as tfl
from op_cases import CASES, all_cases
from tinyflow.ops.registry import NOT_DIFFERENTIABLE, registered_op_types
from tinyflow.nodes import OP_TYPES
from tinyflow.testing import gradcheck

pytestmark = pytest.mark.usefixtures("backend")  # kernels: run once per available backend

TINYFLOW_OPS = {t: cls for t, cls in OP_TYPES.items() if cls.__module__.startswith("tinyflow.")}


def missing_gradients(op_types, registered):
    """Why each op type without a registered gradient fails, with the fix."""
    return [f"{t} ({op_types[t].__module__}): no gradient registered. Add @tfl.register_gradient({t}) below "
            f"the class, or tfl.not_differentiable({t}) if it has none" for t in op_types if t not in registered]


def missing_cases(op_types, registered, cases):
    """Messages for differentiable op types without a case and for cases of op types that do not exist."""
    differentiable = {t for t in op_types if registered.get(t, NOT_DIFFERENTIABLE) is not NOT_DIFFERENTIABLE}
    return ([f"{t} ({op_types[t].__module__}): no gradient check case. Add a case to tests/op_cases.py: "
             f'"{t}": [case(lambda x: ..., normal(3, 4))] (see the cases already there)'
             for t in sorted(differentiable - set(cases))]
            + [f"{t}: tests/op_cases.py has a case for an op type that does not exist (renamed or removed?); "
               "delete or rename it" for t in sorted(set(cases) - set(op_types))])


def test_every_op_type_has_a_gradient_or_is_marked_non_differentiable():
    problems = missing_gradients(TINYFLOW_OPS, registered_op_types())
    assert not problems, "\n".join(problems)


def test_every_differentiable_op_type_has_a_gradcheck_case():
    problems = missing_cases(TINYFLOW_OPS, registered_op_types(), CASES)
    assert not problems, "\n".join(problems)


def test_completeness_messages_say_what_to_add_and_never_raise_key_error():
    """An op with neither a gradient nor a case is reported by name with the fix (a student's first new op)."""
    class Cube(tfl.Operation):
        abstract = True  # keep it out of the real registry

        def compute(self, x):
            return x ** 3
    op_types = {**TINYFLOW_OPS, "Cube": Cube}
    registered = {t: f for t, f in registered_op_types().items() if t != "Cube"}
    assert any("Cube" in m and "@tfl.register_gradient(Cube)" in m for m in missing_gradients(op_types, registered))
    registered["Cube"] = lambda op, grad: [grad]
    messages = missing_cases(op_types, registered, CASES)
    assert messages == [f"Cube ({__name__}): no gradient check case. Add a case to tests/op_cases.py: "
                        '"Cube": [case(lambda x: ..., normal(3, 4))] (see the cases already there)']
    assert missing_cases(op_types, {}, {}) == []  # unregistered ops are the other test's report, not a KeyError
    assert "does not exist" in missing_cases(TINYFLOW_OPS, registered_op_types(), {**CASES, "Gone": []})[0]


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
