"""Fused kernels: the generated C and OpenCL code computes what the ops do one by one."""
import numpy as np
import pytest

import tinyflow as tfl
from tinyflow.backends import compiler, fused
from tinyflow.backends.c_codegen import c_source

from helpers import assert_close, op_types, run_both
from op_cases import CASES
from tinyflow.nodes import OP_TYPES
from tinyflow.ops.elementwise_ops import ElementwiseOp
from tinyflow.ops.expressions import takes_conditions

pytestmark = pytest.mark.usefixtures("backend")  # kernels: run once per available backend

RNG = np.random.default_rng(0)


@pytest.mark.parametrize("other_shape", [(), (4,), (3, 1), (1, 4), (2, 3, 4), (2, 1, 4), (3, 4), (1, 3, 1), (3,)])
def test_broadcast_inputs(other_shape):
    x = tfl.Placeholder((None, 3, 4) if other_shape != (3,) else (None, 2, 3), name="x")
    o = tfl.Placeholder(other_shape, name="o")
    y = tfl.tanh(x * o + 1.0) - tfl.sigmoid(o)
    feed = {x: RNG.standard_normal((2, 3, 4) if other_shape != (3,) else (2, 2, 3)).astype(np.float32),
            o: RNG.standard_normal(other_shape).astype(np.float32)}
    out, ref, plan = run_both(y, feed, runs=2)
    assert op_types(plan) == ["FusedElementwise"]
    assert_close(out, ref)


def test_float64_and_numpy_special_values():
    x = tfl.Placeholder((6,), "float64", name="x")
    y = tfl.maximum(tfl.relu(x) * 2.0, tfl.minimum(x, 0.5)) + tfl.leaky_relu(x, 0.2) + tfl.softplus(x)
    feed = {x: np.array([np.nan, np.inf, -np.inf, -1.0, 0.0, 3.0])}
    out, ref, plan = run_both(y, feed)
    assert "FusedElementwise" in op_types(plan)
    assert_close(out, ref, rtol=1e-12)


def test_every_fusible_op_matches(backend):
    x = tfl.Placeholder((300,), name="x")
    p = tfl.abs(x) + 0.5
    y = tfl.sqrt(p) + tfl.log(p) + tfl.exp(-p) + tfl.square(x) / p + tfl.power(p, 1.5) - tfl.negative(x)
    y = tfl.ops.elementwise_ops.TanhGrad(tfl.tanh(y), x) + tfl.ops.elementwise_ops.SigmoidGrad(tfl.sigmoid(x), y)
    y = tfl.ops.elementwise_ops.ReluGrad(x, y) + tfl.ops.elementwise_ops.LeakyReluGrad(x, y * 0.5)
    out, ref, plan = run_both(y, {x: RNG.standard_normal(300).astype(np.float32)})
    assert op_types(plan).count("FusedElementwise") >= 1 and len(plan.steps) < 10
    assert_close(out, ref, rtol=2e-5, atol=1e-5)


def test_a_chain_longer_than_one_kernel_holds_becomes_several_kernels_with_the_same_values(monkeypatch):
    """MAX_GROUP bounds one generated kernel (its compile time): a longer chain is cut into consecutive kernels."""
    from tinyflow.passes import fusion
    monkeypatch.setattr(fusion, "MAX_GROUP", 4)
    x = tfl.Placeholder((3, 5), name="x")
    y = x
    for i in range(10):
        y = y * 0.5 if i % 2 else y + x
    out, ref, plan = run_both(y, {x: RNG.standard_normal((3, 5)).astype(np.float32)})
    sizes = [len(s.node.members) for s in plan.steps if s.node.op_type == "FusedElementwise"]
    assert sum(sizes) == 10 and max(sizes) == 4 and len(sizes) == 3
    assert_close(out, ref)


# every float op of the elementwise table (and every gradient op made from it): what fusion can take
TABLE = sorted(t for t, cls in OP_TYPES.items() if issubclass(cls, ElementwiseOp) and t in CASES
               and cls.dtype_rule(np.float32) == np.float32 and not takes_conditions(cls.expression))


@pytest.mark.parametrize("op_type", TABLE)
def test_every_op_of_the_elementwise_table_fuses_and_computes_what_it_computes_alone(op_type):
    """Registry-driven: an op added to ops/elementwise.py fuses with no edit to the code generators."""
    case = CASES[op_type][0]
    placeholders = [tfl.Placeholder(v.shape, v.dtype) for v in case.inputs]
    y = case.build(*placeholders) * 1.5 + 0.25
    out, ref, plan = run_both(y, dict(zip(placeholders, case.inputs)))
    members = [m.op_type for s in plan.steps if s.node.op_type == "FusedElementwise" for m in s.node.members]
    assert op_type in members, f"{op_type} did not fuse: {op_types(plan)}"
    assert_close(out, ref, rtol=1e-10, atol=1e-12)


def test_training_graph_forward_backward_and_update_chain_match():
    """A sigmoid/tanh MLP with an Adam-like update written with ops: forward, gradient and update chains fuse."""
    def build():
        x = tfl.Placeholder((None, 5), name="x")
        t = tfl.Placeholder((None, 1), name="t")
        w1 = tfl.Variable(np.linspace(-1, 1, 40, dtype=np.float32).reshape(5, 8), name="w1")
        w2 = tfl.Variable(np.linspace(1, -1, 8, dtype=np.float32).reshape(8, 1), name="w2")
        h = tfl.tanh(tfl.sigmoid(x @ w1) * 2.0 - 1.0)
        loss = tfl.reduce_mean(tfl.square(h @ w2 - t))
        updates = []
        for w, g in zip((w1, w2), tfl.gradients(loss, [w1, w2])):
            m = tfl.Variable(np.zeros(w.shape, np.float32), trainable=False)
            v = tfl.Variable(np.zeros(w.shape, np.float32), trainable=False)
            m_new, v_new = 0.9 * m + 0.1 * g, 0.999 * v + 0.001 * g * g
            updates += [tfl.assign(m, m_new), tfl.assign(v, v_new),
                        tfl.assign_sub(w, 0.01 * m_new / (tfl.sqrt(v_new) + 1e-8))]
        return loss, tfl.group(*updates), w1
    feed_x = RNG.standard_normal((16, 5)).astype(np.float32)
    feed = {"x": feed_x, "t": feed_x[:, :1] * 0.5}
    results = []
    for optimize in (False, True):
        with tfl.Graph().as_default() as graph:
            loss, train, w1 = build()
            sess = tfl.Session(graph, optimize=optimize)
            losses = [sess.run([loss, train], feed)[0] for _ in range(5)]
            results.append((losses, w1.value.copy(), sess.plan([loss, train], {graph.get_node("x"),
                                                                            graph.get_node("t")})))
    (plain, w_plain, _), (fused, w_fused, plan) = results
    assert_close(fused, plain, rtol=1e-4)
    assert_close(w_fused, w_plain, rtol=1e-4, atol=1e-6)
    assert plan.report.counts()["fusion"]["fused_groups"] >= 5   # forward, backward and update chains


def test_error_in_a_fused_kernel_names_the_member_and_its_creation_site():
    x = tfl.Placeholder((None, 3), name="x")
    r = tfl.Placeholder((None,), name="r")
    y = tfl.sigmoid(x * 2.0, name="squash")
    z = tfl.add(y, r, name="shift_by_r")
    z = tfl.tanh(z)
    with pytest.raises(tfl.TinyflowError) as info:
        tfl.Session(optimize=True).run(z, {x: np.ones((2, 3), np.float32), r: np.ones(5, np.float32)})
    message = str(info.value)
    assert "shift_by_r" in message and "test_fusion.py" in message and "squash" in message


def test_layouts_read_broadcast_inputs_in_place():
    from tinyflow.backends.fused import plan_layout
    assert plan_layout(((5, 8, 4, 4), (1, 8, 1, 1),), (5, 8, 4, 4)) == (("full", "col%8"), 40, 16)
    assert plan_layout(((6, 4), (4,), (),), (6, 4)) == (("full", "row", "scalar"), 6, 4)
    assert plan_layout(((6, 4), (6, 1),), (6, 4)) == (("full", "col"), 6, 4)
    assert plan_layout(((6, 4), (6, 1), (4,),), (6, 4)) == (("full", "col", "row"), 6, 4)
    assert plan_layout(((2, 3, 4), (2, 1, 4),), (2, 3, 4))[0] == ("full", "expand")


def test_generated_c_is_one_simd_loop_on_the_librarys_thread_pool():
    x = tfl.Placeholder((10,), name="x")
    b = tfl.Placeholder((3, 10), name="b")
    graph = tfl.passes.optimize([tfl.sigmoid(1.5 * x + 0.5) * 2.0], {x})
    fused = graph.fetches[0]
    source = c_source(fused, ("full",))
    loop = source[source.index("static void tf_chunk"):]
    assert "#pragma omp simd" in loop and "tf_sigmoidf(" in loop and "1.5f" in loop and "expf(" not in loop
    assert "((tf_parallel_fn)parallel)(n, n, tf_chunk, &k)" in source and "omp parallel" not in source
    rows = c_source(tfl.passes.optimize([tfl.exp(b + x) * 2.0], {x, b}).fetches[0], ("full", "row"))
    assert "#pragma omp simd" in rows and "x1[c]" in rows and "tf_expf(" in rows


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("size", [1, 15, 16, 17, 100])
def test_long_arithmetic_chains_take_the_vector_form_with_the_same_values(dtype, size):
    """Blocks of vector lanes, then the last elements one by one: every size gives the unfused values."""
    x = tfl.Placeholder((size,), dtype, name="x")
    c = tfl.Placeholder((size,), dtype, name="c")
    s = tfl.Placeholder((), dtype, name="s")
    y = x
    for k in range(10):
        y = (y + c) * 0.5 if k % 2 else y - s * 1.5   # `s * 1.5` reads only scalars: a scalar member
    y = -tfl.square(y) / 3.0
    feed = {x: RNG.standard_normal(size).astype(dtype), c: RNG.standard_normal(size).astype(dtype),
            s: np.asarray(0.25, dtype)}
    failed = compiler.STATS["failed"]
    out, ref, plan = run_both(y, feed, runs=2)
    assert_close(out, ref, rtol=1e-6 if dtype == "float32" else 1e-12)
    assert compiler.STATS["failed"] == failed  # the vector form compiles (else numpy would hide it)
    assert op_types(plan) == ["FusedElementwise"]
    fused = plan.steps[-1].node
    assert "vector_size" in c_source(fused, ("full", "full", "scalar"))
    assert "vector_size" not in c_source(tfl.passes.optimize([tfl.exp(y)], {x, c, s}).fetches[0],
                                         ("full", "full", "scalar"))  # calls: the plain loop


@pytest.mark.parametrize("size", [3, 16 + 5, 2 * 16 + 15])
def test_the_vector_forms_last_values_keep_nan_inf_and_signed_zeros(size):
    """The last n % LANES values run as one block padded with zeros (their results dropped): special values there,
    and a division by the padding's zeros, give exactly the unfused values."""
    special = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-40, -3.5, 2.0], np.float32)
    x = tfl.Placeholder((size,), name="x")
    c = tfl.Placeholder((size,), name="c")
    y = x
    for k in range(10):
        y = y / c + 1.0 if k % 2 else y * c - 0.5
    x_value = np.resize(special, size)
    c_value = np.resize(special[::-1], size)
    with np.errstate(all="ignore"):
        out, ref, plan = run_both(y, {x: x_value, c: c_value}, backend="c", runs=2)
    assert op_types(plan) == ["FusedElementwise"]
    assert "tf_lanes(p0, p1, last)" in c_source(plan.steps[-1].node, ("full", "full"))
    numbers = ~np.isnan(ref)  # (a NaN's sign is the CPU's choice)
    np.testing.assert_array_equal(np.signbit(out[numbers]), np.signbit(ref[numbers]))
    np.testing.assert_array_equal(out, ref)  # NaN where NaN, the same values elsewhere (no contraction into FMAs)


def test_numpy_fallback_without_a_compiler(monkeypatch, tmp_path):
    if tfl.backends.get_backend().name != "c":
        pytest.skip("the C compiler matters on the c backend only")
    monkeypatch.setenv("TINYFLOW_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("CC", str(tmp_path / "no-such-compiler"))
    monkeypatch.setattr(compiler, "_loaded", {})
    monkeypatch.setattr(compiler, "_warned", [])
    failed = compiler.STATS["failed"]
    x = tfl.Placeholder((5,), name="x")
    y = tfl.exp(x * 0.25 + 0.125) * 3.0
    with pytest.warns(compiler.FusionWarning, match="could not compile"):
        out, ref, plan = run_both(y, {x: np.arange(5, dtype=np.float32)})
    assert_close(out, ref)
    assert compiler.STATS["failed"] == failed + 1 and op_types(plan) == ["FusedElementwise"]


def test_a_tiered_run_never_waits_for_the_compiler(monkeypatch, tmp_path):
    """After its first tiered runs a fused kernel compiles on a background thread; the runs meanwhile compute with
    the members' kernels (same values), and the first run after the compile calls the kernel."""
    import threading
    if tfl.backends.get_backend().name != "c":
        pytest.skip("the background compile is the c backend's (OpenCL builds its programs on the device)")
    monkeypatch.setenv("TINYFLOW_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("TINYFLOW_FUSION_JIT_AFTER", "1")
    started, release, compiled_on = threading.Event(), threading.Event(), []
    build = compiler._load_or_build

    def held_build(*args):  # a compile that lasts until the test says so
        compiled_on.append(threading.current_thread().name)
        started.set()
        assert release.wait(30), "the run waited for the compiler"
        return build(*args)
    monkeypatch.setattr(compiler, "_load_or_build", held_build)
    x = tfl.Placeholder((40, 30), name="x")
    y = tfl.tanh(x * 0.375 + 0.0625) * x - 0.8125  # constants of this test alone: a kernel not yet in memory
    session = tfl.Session(tfl.get_default_graph())
    value = RNG.standard_normal((40, 30)).astype(np.float32)
    expected = np.tanh(value * 0.375 + 0.0625) * value - 0.8125
    for _ in range(4):  # run 1 is the tier's; runs 2-4 happen while the kernel is compiling
        assert_close(session.run(y, {x: value}), expected)
    assert started.wait(30) and compiled_on[0] == "tinyflow-compile"  # (after other tests' compiles)
    compile_thread = next(t for t in threading.enumerate() if t.name == "tinyflow-compile")
    assert compile_thread.daemon  # a program that ends does not wait for the compiles it started
    kernel = next(step.kernel for step in session.plan([y], {x}).steps if step.node.op_type == "FusedElementwise")
    assert list(kernel._by_shapes.values()) == [fused.PENDING]
    release.set()
    compiler.wait_for_compiles()
    assert_close(session.run(y, {x: value}), expected)
    assert [type(entry) for entry in kernel._by_shapes.values()] == [tuple]  # the compiled kernel and its layout


def test_a_background_compile_leaves_the_working_directory_and_environment_alone(monkeypatch, tmp_path):
    """cffi changes the process's working directory while it compiles: the kernel compiles in a child process, so
    the user's threads (and the programs they start) never see another folder or environment meanwhile."""
    import os
    if tfl.backends.get_backend().name != "c":
        pytest.skip("the background compile is the c backend's (OpenCL builds its programs on the device)")
    monkeypatch.setenv("TINYFLOW_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("TINYFLOW_FUSION_JIT_AFTER", "1")
    x = tfl.Placeholder((40, 30), name="x")
    y = tfl.sigmoid(x * 0.4375 - 0.15625) * x + 0.71875  # constants of this test alone: a kernel to compile
    session = tfl.Session(tfl.get_default_graph())
    value = RNG.standard_normal((40, 30)).astype(np.float32)
    here, environment, seen = os.getcwd(), dict(os.environ), set()
    for _ in range(2):
        session.run(y, {x: value})
    while compiler._pending:  # the compile runs: look at what this thread sees meanwhile
        seen.add((os.getcwd(), tuple(sorted(os.environ.items())) == tuple(sorted(environment.items()))))
    compiler.wait_for_compiles()
    assert seen <= {(here, True)}


@pytest.mark.parametrize("special", [np.nan, np.inf, -np.inf, 100.0, -60.0])  # -60: a denormal sigmoid
@pytest.mark.parametrize("size", [1, 255, 256, 257, 1000])
def test_sigmoid_runs_its_common_form_in_blocks_and_the_full_form_where_a_block_needs_it(size, special, monkeypatch):
    """The cheap form for |x| <= 86 and the full one give the same bits; a block with one value beyond runs in full."""
    monkeypatch.setenv("TINYFLOW_FUSION_JIT_AFTER", "0")
    x = tfl.Placeholder((size,), name="x")
    y = tfl.sigmoid(x * 1.5 - 0.5) * 2.0
    values = RNG.uniform(-40, 40, size).astype(np.float32)
    values[size // 2] = special
    out, ref, plan = run_both(y, {x: values})
    assert op_types(plan) == ["FusedElementwise"]
    source = c_source(plan.steps[-1].node, ("full",))
    assert "tf_sigmoidf_common(" in source and "tf_magnitude_bits(" in source and "tf_sigmoidf(" in source
    with np.errstate(all="ignore"):
        z = (values * np.float32(1.5) - np.float32(0.5)).astype(np.float64)  # rounded as the kernel rounds it
    with np.errstate(all="ignore"):
        exact = 2 * np.where(z < 0, np.exp(z) / (1 + np.exp(z)), 1 / (1 + np.exp(-z)))
    np.testing.assert_allclose(out, exact.astype(np.float32), rtol=1e-6, atol=3e-45)  # denormals to the ulp
    if tfl.backends.get_backend().name == "c":
        np.testing.assert_array_equal(out, ref)  # the library's sigmoid, one op at a time
    else:
        assert_close(out, ref)


@pytest.mark.parametrize("special", [np.nan, np.inf, -np.inf, -90.0])  # the common form gets all but NaN wrong
def test_a_block_runs_in_full_when_any_of_several_sigmoids_has_an_argument_beyond_the_common_range(special, monkeypatch):
    """Two sigmoids in one kernel: the first one's arguments all common, one of the second's not; the block with it
    runs in full, the others in the common form, and every value is the ops' own."""
    monkeypatch.setenv("TINYFLOW_FUSION_JIT_AFTER", "0")
    x = tfl.Placeholder((1000,), name="x")
    w = tfl.Placeholder((1000,), name="w")
    y = tfl.sigmoid(x * 0.5) + tfl.sigmoid(w * 2.0 - 1.0)
    first, second = RNG.uniform(-40, 40, 1000).astype(np.float32), RNG.uniform(-40, 40, 1000).astype(np.float32)
    second[700] = special
    out, ref, plan = run_both(y, {x: first, w: second})
    assert op_types(plan) == ["FusedElementwise"]
    kernel = c_source(plan.steps[-1].node, ("full", "full")).split("static void tf_chunk", 1)[1]
    assert kernel.count("tf_magnitude_bits(") == 2  # after tf_math.h: one range update per sigmoid
    if tfl.backends.get_backend().name == "c":
        np.testing.assert_array_equal(out, ref)
    else:
        assert_close(out, ref)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_kernels_compiled_for_this_cpu_compute_arithmetic_bit_for_bit_as_the_ops_one_by_one(dtype, monkeypatch):
    """-march=native brings FMA, but a*b + c must round twice, as the unfused ops (and numpy) round it."""
    monkeypatch.setenv("TINYFLOW_FUSION_JIT_AFTER", "0")
    x = tfl.Placeholder((None, 257), dtype, name="x")
    a = tfl.Placeholder((257,), dtype, name="a")
    y = tfl.relu(x * a + 0.1) * 3.0 - x * x + a * 0.7
    feed = {x: RNG.standard_normal((33, 257)).astype(dtype), a: RNG.standard_normal(257).astype(dtype)}
    failed = compiler.STATS["failed"]
    out, ref, plan = run_both(y, feed)
    assert op_types(plan) == ["FusedElementwise"] and compiler.STATS["failed"] == failed
    np.testing.assert_array_equal(out, ref)
    if tfl.backends.get_backend().name == "c":
        assert "-march=native" in compiler.compile_flags() or not compiler._accepts_native()
        assert "-ffp-contract=off" in compiler.compile_flags()


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_the_onnx_elementwise_ops_fuse_with_numpy_values(dtype, backend):
    """Each elementwise op added for ONNX has an expression: a chain of all of them is one kernel."""
    x = tfl.Placeholder((None, 7), dtype, name="x")
    s = tfl.Placeholder((7,), dtype, name="s")
    y = (tfl.sin(x) + tfl.cos(x) * tfl.erf(x) + tfl.floor(x * 3.0) - tfl.ceil(x * 2.0)
         + tfl.reciprocal(tfl.abs(x) + 1.0) + tfl.mod(x * 5.0, s) - tfl.fmod(x * 5.0, s)
         + tfl.clip(x, -0.5, s) + tfl.elu(x, 0.7) + tfl.gelu(x) + tfl.gelu(x, approximate="tanh")
         + tfl.softsign(x) + tfl.prelu(x, s))
    values = RNG.standard_normal((300, 7)) * 2
    values[0, :4] = [np.nan, np.inf, -np.inf, 0.0]
    slopes = np.array([0.5, -1.5, 2.0, -0.25, 1.0, 3.0, -2.0])
    with np.errstate(all="ignore"):
        out, ref, plan = run_both(y, {x: values.astype(dtype), s: slopes.astype(dtype)}, backend=backend, runs=3)
    assert op_types(plan).count("FusedElementwise") == 1 and len(plan.steps) == 1, op_types(plan)
    assert_close(out, ref, rtol=2e-5 if dtype == "float32" else 1e-12, atol=1e-5 if dtype == "float32" else 1e-12)


def test_a_negative_zero_constant_in_a_fused_expression_compiles(backend):
    """Issue 35: `x - (-0.0)` was spelled `(--0.0f)`, which no C compiler takes: the fused kernel was lost."""
    from tinyflow.ops.expressions import literal
    assert literal(-0.0, True) == "(-0.0f)" and literal(-2.5, False) == "(-2.5)"
    x = tfl.Placeholder((300,), name="x")
    y = tfl.exp(x - tfl.Constant(np.float32(-0.0))) * tfl.Constant(np.float32(-0.0)) + x
    failed = compiler.STATS["failed"]
    out, ref, plan = run_both(y, {x: RNG.standard_normal(300).astype(np.float32)}, runs=3)
    assert "FusedElementwise" in op_types(plan) and compiler.STATS["failed"] == failed
    assert_close(out, ref)
