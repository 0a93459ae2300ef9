"""The gradient table: keyed by op class, below the ops, and safe against student op names."""
import ast
import pathlib

import numpy as np
import pytest

import tinyflow as tfl
from tinyflow.nodes import OP_TYPES
from tinyflow.ops.registry import gradient_function

OPS_DIR = pathlib.Path(tfl.__file__).parent / "ops"


def _unary_op_class(class_name, module, scale):
    """An op class named `class_name` as if defined in `module` (two student files, one name)."""
    def __init__(self, x, name=None):
        tfl.Operation.__init__(self, x, name=name)
    body = dict(__init__=__init__, __module__=module, compute=lambda self, x: scale * x,
                infer_shape=lambda self, s: s)
    return type(class_name, (tfl.Operation,), body)


def test_op_files_do_not_import_autodiff():
    """Layering: ops register gradients in ops/registry.py; autodiff depends on ops, never the reverse."""
    offenders = []
    for path in sorted(OPS_DIR.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and "autodiff" in (node.module or ""):
                offenders.append(f"{path.name}: from {'.' * node.level}{node.module}")
    assert offenders == []


def test_an_op_class_named_like_a_builtin_is_refused_with_a_fix():
    with pytest.raises(tfl.GraphError, match=r"'Tanh'.*already a tinyflow op.*another name.*op_type"):
        _unary_op_class("Tanh", "student_homework", 2.0)
    assert OP_TYPES["Tanh"] is tfl.ops.elementwise_ops.Tanh
    x = tfl.Placeholder((3,), "float64")
    (g,) = tfl.gradients(tfl.reduce_sum(tfl.tanh(x)), [x])
    with tfl.Session() as sess:
        np.testing.assert_allclose(sess.run(g, {x: [0.0, 1.0, -2.0]}), 1 - np.tanh([0.0, 1.0, -2.0]) ** 2)


def test_setting_op_type_avoids_the_clash():
    cls = type("Tanh", (tfl.Operation,), dict(op_type="StudentTanh", __module__="student_homework",
                                              compute=lambda self, x: np.tanh(x), infer_shape=lambda self, s: s))
    assert cls.op_type == "StudentTanh" and OP_TYPES["StudentTanh"] is cls


def test_register_gradient_applies_to_that_class_only():
    first = _unary_op_class("Scale", "student_a", 2.0)
    second = _unary_op_class("Scale", "student_b", 3.0)  # same name, another module: both usable

    @tfl.register_gradient(first)
    def _first_grad(op, grad):
        return [2.0 * grad]

    x = tfl.Placeholder((2,), "float64")
    assert gradient_function(first(x)) is _first_grad
    with pytest.raises(tfl.GradientError, match="no gradient is registered for op type 'Scale'"):
        tfl.gradients(tfl.reduce_sum(second(x)), [x])

    @tfl.register_gradient(second)
    def _second_grad(op, grad):
        return [3.0 * grad]
    (g1,) = tfl.gradients(tfl.reduce_sum(first(x)), [x])
    (g2,) = tfl.gradients(tfl.reduce_sum(second(x)), [x])
    with tfl.Session() as sess:
        np.testing.assert_array_equal(sess.run([g1, g2], {x: [1.0, 1.0]}), [[2.0, 2.0], [3.0, 3.0]])


def test_register_gradient_by_name_resolves_to_the_defined_class():
    cls = _unary_op_class("NamedByString", "student_c", 5.0)

    @tfl.register_gradient("NamedByString")
    def _grad(op, grad):
        return [5.0 * grad]
    assert gradient_function(cls(tfl.Placeholder((1,)))) is _grad
    with pytest.raises(tfl.GradientError, match="no op type named 'NoSuchOp' is defined"):
        tfl.register_gradient("NoSuchOp")
    with pytest.raises(tfl.GradientError, match="take an Operation subclass"):
        tfl.not_differentiable(42)


def test_redefining_a_class_in_the_same_module_replaces_it():
    """Re-running a notebook cell defines the class again: that must keep working."""
    old = _unary_op_class("Rerun", "notebook_cell", 1.0)
    new = _unary_op_class("Rerun", "notebook_cell", 1.0)
    assert OP_TYPES["Rerun"] is new is not old
