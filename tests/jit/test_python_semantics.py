"""to_static keeps Python's meaning: lists, in-place updates, aliases, attributes, comparisons, argument values and
the forms AutoGraph and Paddle convert (nested defs, lambdas, ternaries, :=); what it cannot convert is a
ConversionError naming the line (issue 35)."""
import os

import numpy as np
import pytest

import tinyflow as tfl
from tinyflow.jit import ConversionError

BACKEND_INDEPENDENT = True  # conversion semantics: the kernels are checked elsewhere
HERE = os.path.basename(__file__)


def line_of(text):
    """The line number of the first line of this file containing `text` (error messages name it)."""
    with open(__file__) as f:
        return next(i for i, line in enumerate(f, 1) if text in line and "line_of" not in line)


def agree(fn, *args, grads=False):
    """to_static(fn)(*args) against fn on eager Tensors: values, dtypes and (with grads) the first argument's grad."""
    eager_args = [tfl.tensor(a, requires_grad=grads and i == 0) if isinstance(a, np.ndarray) else a
                  for i, a in enumerate(args)]
    static_args = [tfl.tensor(a, requires_grad=True) if grads and i == 0 else a for i, a in enumerate(args)]
    expected, got = fn(*eager_args), tfl.jit.to_static(fn)(*static_args)
    np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-6)
    assert got.numpy().dtype == expected.numpy().dtype
    if grads:
        tfl.reduce_sum(expected).backward()
        tfl.reduce_sum(got).backward()
        np.testing.assert_allclose(static_args[0].grad, eager_args[0].grad, rtol=1e-6)
    return got


X = np.array([1.0, 2.0], np.float32)


# ---------------------------------------------------------------- lists (item 0)
CALLS = []


def logged(x):
    CALLS.append(1)  # a module-level list: the helper must not make it a local
    return x * 2.0


def calls_a_logging_helper(x, n):
    for _ in tfl.range(n):
        x = logged(x)
    return logged(x)


def test_a_helper_appending_to_a_module_level_list_keeps_working():
    CALLS.clear()
    np.testing.assert_allclose(tfl.jit.to_static(calls_a_logging_helper)(X, np.array(2)), X * 8)
    assert CALLS == [1, 1]  # once per trace of each call site: a side effect of tracing


class Holder:
    pass


def appends_through_an_alias(x, n):
    holder, ys = Holder(), []
    holder.ys = ys
    for _ in tfl.range(n):
        x = x + 1.0
        ys.append(x)
    ys.append(x * 10.0)
    for _ in tfl.range(n):
        x = x - 1.0
        ys.append(x)
    return tfl.stack(holder.ys)


def test_a_list_a_tensor_loop_appends_to_stays_one_object_for_every_name_holding_it():
    assert agree(appends_through_an_alias, X, np.array(2)).shape == (5, 2)


def appends_an_outer_expression(x, n):
    ys = []
    for i in range(n):
        ys.append(x * tfl.cast(i, "float32"))  # reads x from outside the loop
    return tfl.stack(ys)


def test_an_appended_expression_reading_an_outer_tensor_is_collected():
    np.testing.assert_allclose(tfl.jit.to_static(appends_an_outer_expression)(X, np.array(3)), [X * 0, X, X * 2])


def appends_after_a_break(x, n):
    ys = []
    for _ in tfl.range(n):
        if tfl.reduce_sum(x) > 5.0:
            break
        x = x * 1.5
        ys.append(x)
    i = 0
    while i < n:
        i += 1
        if tfl.reduce_sum(x) > 8.0:
            break
        x = x + 1.0
        ys.append(x)
    return tfl.stack(ys)


@pytest.mark.parametrize("n", [1, 6])  # 6: both loops stop at their break
def test_a_list_appended_after_a_tensor_break_collects_the_iterations_that_ran(n):
    agree(appends_after_a_break, X, np.array(n), grads=True)


def grows_after_a_continue(x, n):
    ys = []
    for i in tfl.range(n):
        if tfl.reduce_sum(x) > 5.0:  # skips the append
            continue
        ys.append(x)
    return tfl.stack(ys)


def test_a_list_appended_after_a_tensor_continue_names_the_continue():
    with pytest.raises(ConversionError, match=f"{HERE}:{line_of('skips the append')}.*after a `continue`"):
        tfl.jit.to_static(grows_after_a_continue)(X, np.array(2))


# ---------------------------------------------------------------- in place (items 1, 2)
def counts_in_place(n):
    a = tfl.tensor(np.zeros(2, np.float32))  # a constant made inside: a graph constant the loop carries
    i = 0
    while i < n:
        a += 1
        i += 1
    return a


def test_an_in_place_add_in_a_tensor_loop_counts_every_iteration():
    np.testing.assert_allclose(tfl.jit.to_static(counts_in_place)(np.array(10)), [10.0, 10.0])


def changes_an_alias(b):
    b = b * 1.0
    tmp = b
    tmp -= 1.0
    xs = [b]
    b *= 3.0
    return b + xs[0]


def bump(h):
    h += 1.0


def changes_in_a_helper(x):
    a = x * 2.0
    bump(a)
    return a


def keeps_the_dtype(x, k):
    k = k + 0
    k += 1.5  # int stays int, as an eager in-place op keeps the tensor's dtype
    return k * 2


def test_an_in_place_update_changes_the_tensor_every_alias_holds():
    agree(changes_an_alias, X, grads=True)
    agree(changes_in_a_helper, X, grads=True)
    agree(keeps_the_dtype, X, np.array(3))


def changes_in_control_flow(x, n):
    a = x * 1.0
    b = a
    if tfl.reduce_sum(x) > 2.0:
        a += 2.0
    c = a
    i = 0
    while i < n:
        a *= 1.5
        i += 1
    return a + b * 10.0 + c * 100.0


@pytest.mark.parametrize("sign,n", [(1.0, 2), (-1.0, 0)])
def test_an_in_place_update_inside_a_tensor_if_or_loop_reaches_every_alias(sign, n):
    agree(changes_in_control_flow, X * sign, np.array(n), grads=True)


def alias_of_either(x):
    a = x * 1.0
    b = a
    if tfl.reduce_sum(x) > 0:
        a = a * 3.0
    a += 1.0  # b's tensor changes only if the condition was false
    return a + b


def alias_read_in_the_loop(x, n):
    a = x * 1.0
    b = a
    i = 0
    while i < n:
        a += 1.0
        i += 1
        a = a + b
    return a


def changes_an_argument(x):
    x += 1.0
    return x


TOTAL = tfl.tensor(np.zeros(2, np.float32))


def changes_an_outer_eager_tensor(x):
    global TOTAL
    TOTAL += x
    return x


def test_in_place_updates_tracing_cannot_know_are_refused_naming_the_line():
    with pytest.raises(ConversionError, match=f"{HERE}:{line_of('tensor changes only if')}.*read again"):
        tfl.jit.to_static(alias_of_either)(X)
    with pytest.raises(ConversionError, match=f"{HERE}:.*also reads through another name"):
        tfl.jit.to_static(alias_read_in_the_loop)(X, np.array(2))
    with pytest.raises(ConversionError, match=f"{HERE}:{line_of('    x += 1.0')}.*argument of the function"):
        tfl.jit.to_static(changes_an_argument)(X)
    with pytest.raises(ConversionError, match="eager Tensor from outside the function"):
        tfl.jit.to_static(changes_an_outer_eager_tensor)(X)


# ---------------------------------------------------------------- attributes (item 3)
class Counter:
    value = 5


COUNTER = Counter()


def sets_an_attribute_in_a_tensor_loop(x, n):
    i = 0
    while i < n:
        COUNTER.value = 7
        i += 1
    return x


def test_an_attribute_assigned_inside_a_tensor_while_is_a_conversion_error():
    with pytest.raises(ConversionError, match=f"{HERE}:{line_of('COUNTER.value = 7')}.*loop over a tensor"):
        tfl.jit.to_static(sets_an_attribute_in_a_tensor_loop)(X, np.array(0))
    assert COUNTER.value == 5


# ---------------------------------------------------------------- comparisons (item 4, and/or/not)
SEEN = []


def middle(value):
    SEEN.append(1)
    return value


def chained(x):
    if 0.0 < middle(tfl.reduce_sum(x)) < 10.0:
        return x
    return -x


def test_a_chained_comparison_evaluates_its_middle_operand_once():
    SEEN.clear()
    np.testing.assert_allclose(tfl.jit.to_static(chained)(X), X)
    assert SEEN == [1]


def short_circuits(x, a=None):
    if tfl.reduce_sum(x) > 1.0 or a is None or a > 1:
        return x
    return -x


def matrix_or(x):
    return x and 3.0


def test_or_skips_later_operands_after_a_python_true_and_errors_name_the_line():
    np.testing.assert_allclose(tfl.jit.to_static(short_circuits)(-X), -X)
    with pytest.raises(ConversionError, match=f"{HERE}:{line_of('return x and 3.0')}.*shape \\(2, 2\\)"):
        tfl.jit.to_static(matrix_or)(np.ones((2, 2), np.float32))


# ---------------------------------------------------------------- the cache key (item 5)
def scaled(x, c):
    return x * c


def picks(x, c):
    return x + (1.0 if c is True else 100.0)


def test_equal_but_different_python_arguments_get_programs_of_their_own():
    f = tfl.jit.to_static(scaled)
    assert not np.signbit(f(X, 0.0).numpy()).any()
    assert np.signbit(f(X, -0.0).numpy()).all()
    g = tfl.jit.to_static(picks)
    np.testing.assert_allclose(g(X, 1), X + 100.0)
    np.testing.assert_allclose(g(X, True), X + 1.0)


def weighted_sum(x, xs):
    total = x * 0.0
    for i, v in enumerate(xs):
        total = total + v * i
    return total


def test_tensors_inside_tuple_and_list_arguments_are_inputs_not_constants():
    f = tfl.jit.to_static(weighted_sum)
    a, b = tfl.tensor(np.ones(2, np.float32)), tfl.tensor(np.full(2, 2.0, np.float32))
    np.testing.assert_allclose(f(X, (a, b)), [2.0, 2.0])
    b.add_(1.0)  # the same object, a new value: the program reads it again
    np.testing.assert_allclose(f(X, (a, b)), [3.0, 3.0])
    np.testing.assert_allclose(f(X, [a, b, a]), [5.0, 5.0])


# ---------------------------------------------------------------- forms that convert
def with_nested_def(x):
    scale = 2.0

    def inner(y, k=scale):  # a default naming an enclosing local
        if tfl.reduce_sum(y) > 0:
            return y * k
        return -y
    return inner(x)


def make_scaler():
    factor = 3.0

    def scale_by(x, k=factor):
        return x * k if tfl.reduce_sum(x) > 0 else -x  # a ternary on a tensor
    return scale_by


def with_lambda(x):
    pick = lambda y: y * 2.0 if tfl.reduce_sum(y) > 0 else -y  # noqa: E731
    return pick(x)


def with_walrus(x):
    while (total := tfl.reduce_sum(tfl.abs(x))) < 10.0:
        x = x * 2.0
    return x + total


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_nested_defs_defaults_lambdas_ternaries_and_walrus_tests_convert(sign):
    for fn in (with_nested_def, make_scaler(), with_lambda, with_walrus):
        agree(fn, X * sign)


def test_a_lambda_given_to_to_static_is_converted():
    f = tfl.jit.to_static(lambda x, k=3.0: x * k if tfl.reduce_sum(x) > 0 else -x)
    np.testing.assert_allclose(f(X), X * 3.0)
    np.testing.assert_allclose(f(-X), X)


def collects_into(x, out):
    out.append(x * 2.0)
    return x


def test_a_list_argument_the_function_appends_to_is_a_conversion_error():
    with pytest.raises(ConversionError, match="collects_into changes its argument 'out'.*return the values instead"):
        tfl.jit.to_static(collects_into)(X, [])


def asserts(x):
    assert tfl.reduce_sum(x) > 0, "positive"
    return x


def asserts_python(x, flag):
    assert flag, "flag must be set"
    return x


def test_an_assert_on_a_tensor_is_a_conversion_error_and_a_python_assert_stays_python():
    with pytest.raises(ConversionError, match=f"{HERE}:{line_of('assert tfl.reduce_sum(x) > 0')}.*`assert` on a"):
        tfl.jit.to_static(asserts)(X)
    with pytest.raises(AssertionError, match="flag must be set"):
        tfl.jit.to_static(asserts_python)(X, False)


def counts_to(x, n):
    for _ in range(n):
        x = x + 1.0
    return x


N = tfl.tensor([3])


def counts_to_a_closure(x):
    return counts_to(x, N)


def test_range_of_a_shape_1_int_tensor_counts_its_value():
    for fn, args in ((counts_to, (X, np.array([3]))), (counts_to_a_closure, (X,))):
        np.testing.assert_allclose(tfl.jit.to_static(fn)(*args), X + 3.0)


def one_element_list(x):
    return [x * 2.0]


def one_element_tuple(x):
    return (x * 2.0,)


def test_a_one_element_list_or_tuple_return_stays_a_list_or_tuple():
    for fn, kind in ((one_element_list, list), (one_element_tuple, tuple)):
        for x in (X, tfl.tensor(X, requires_grad=True)):  # the second is one op of eager autograd
            result = tfl.jit.to_static(fn)(x)
            assert type(result) is kind and len(result) == 1


def constants_through_control_flow(x, n):
    total = tfl.tensor(0.0)
    i = 0
    while i < n:
        total = total + tfl.reduce_sum(x)
        i += 1
    if tfl.reduce_sum(x) > 0:
        total = total * 2.0
    return total


def test_constants_made_with_tfl_tensor_are_carried_through_tensor_loops_and_ifs():
    agree(constants_through_control_flow, X, np.array(3), grads=True)


def test_a_function_without_source_says_why_a_tensor_if_fails():
    namespace = {"tfl": tfl}
    exec("def no_source(x):\n    if tfl.reduce_sum(x) > 0:\n        return x\n    return -x\n", namespace)  # noqa: S102
    with pytest.raises(ConversionError, match="<string>:2: no_source has no source code.*Define it in a file"):
        tfl.jit.to_static(namespace["no_source"])(X)


W = tfl.tensor(np.ones((2, 2), np.float32), requires_grad=True)


def uses_a_tensor_that_requires_grad(x):
    return tfl.reduce_sum(x @ W)


def test_an_eager_tensor_that_requires_grad_next_to_a_graph_node_is_an_error():
    with pytest.raises(tfl.TinyflowError, match="requires grad.*gradient would be lost.*pass it as an argument"):
        tfl.jit.to_static(uses_a_tensor_that_requires_grad)(np.ones((1, 2), np.float32))
    with pytest.raises(tfl.TinyflowError, match="requires grad.*graph node 'x'"):
        tfl.Placeholder((1, 2), name="x") @ W
