"""tinyflow's own thread pool (ckernels/src/threads.c): right answers however it is called and whatever else is loaded."""
import multiprocessing
import os
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

from tinyflow.backends import native
from tinyflow.backends.c_backend import flat_kernel

pytestmark = pytest.mark.skipif(not native.is_built(), reason="the C kernel library is not built (pip install -e .)")
PARALLEL_MIN = native.lib.TF_PARALLEL_MIN if native.is_built() else 0


def sigmoid(x):
    """The C library's sigmoid kernel on a float32 array."""
    y = np.empty_like(x)
    flat_kernel("Sigmoid")(native.ffi.from_buffer("float[]", x), native.ffi.from_buffer("float[]", y), x.size)
    return y


@pytest.fixture
def threads(monkeypatch):
    """Set the pool's thread count for one test (restored after it)."""
    def use(count):
        monkeypatch.setenv("TINYFLOW_NUM_THREADS", str(count))
        native.configure_threads()
    yield use
    monkeypatch.undo()
    native.configure_threads()


@pytest.mark.parametrize("size", [PARALLEL_MIN, PARALLEL_MIN + 1, PARALLEL_MIN + 17, 3 * PARALLEL_MIN + 5,
                                  4 * PARALLEL_MIN + 3])  # the last pays for 8 threads: all 7 take part
@pytest.mark.parametrize("count", [2, 3, 7])
def test_parallel_chunks_cover_every_element_exactly_once(threads, size, count):
    """a = a + 1 a in place (the triad): an element done twice would become 4 a, one skipped would stay a."""
    threads(count)
    a = (np.arange(size) % 1000 + 1).astype(np.float32)
    expected = 2 * a
    native.lib.tf_triad_f32(native.ffi.from_buffer("float[]", a), native.ffi.from_buffer("float[]", a),
                            native.ffi.from_buffer("float[]", a), 1.0, size)
    np.testing.assert_array_equal(a, expected)


def chunk_orders(n, cost):
    """{part: the indices of the chunks it ran, in the order it ran them} for one parallel job, and the chunk count."""
    log = np.zeros(2 * n, np.int64)
    chunks = native.lib.tf_parallel_trace(n, cost, native.ffi.from_buffer("long[]", log))
    parts, starts = log[:2 * chunks:2], log[1:2 * chunks:2]
    index = {start: i for i, start in enumerate(sorted(starts))}
    orders = {}
    for part, start in zip(parts, starts):
        orders.setdefault(int(part), []).append(index[start])
    return orders, chunks


@pytest.mark.parametrize("count", [2, 3])
def test_each_thread_runs_its_own_range_of_chunks_from_the_front_then_the_others_from_the_back(threads, count):
    """Part k owns chunks [k C/P, (k+1) C/P): it runs those it gets from the front, in order, then what is left of
    the next ranges in turn, each from the back, so their owners keep streaming forward. A thread streaming one
    stretch keeps the prefetchers going (chunks handed out in turn made a 10M Adam step 2.8 ms instead of 2.0-2.5
    where memory allowed it)."""
    import time
    threads(count)
    n, cost = 4096, 32 * count * 32768  # enough work for the most chunks a job is cut into: 32 per thread
    helped, deadline = 0, time.monotonic() + 5
    while helped < 3 and time.monotonic() < deadline:  # however late the workers are woken (each chunk takes 20 us)
        orders, chunks = chunk_orders(n, cost)
        helped += len(orders) > 1
        assert sorted(sum(orders.values(), [])) == list(range(chunks))  # every chunk once
        assert chunks == 32 * count
        for part, order in orders.items():
            ranges = [chunk * count // chunks for chunk in order]  # the part whose range each chunk is in
            visits = [(r - part) % count for r in ranges]  # 0: its own range, then the next ones in turn
            assert visits == sorted(visits), (part, order)
            for r in set(ranges):
                taken = [c for c, rr in zip(order, ranges) if rr == r]
                assert taken == sorted(taken, reverse=r != part), (part, order)
    assert helped, "no worker ever ran a chunk in 5 s: nothing was checked"


def test_a_job_takes_no_more_threads_than_its_cost_pays_for(threads):
    """Waking a thread costs 5-60 µs: a job gets one thread per TF_PARALLEL_MIN / 2 of cost, up to the pool's count,
    so a job just over the threshold runs on two threads however many the pool has."""
    threads(8)
    assert [native.lib.tf_threads_for(cost) for cost in (0, PARALLEL_MIN - 1, PARALLEL_MIN, 3 * PARALLEL_MIN,
                                                         4 * PARALLEL_MIN, 10 ** 12)] == [1, 1, 2, 6, 8, 8]
    for _ in range(5):
        orders, chunks = chunk_orders(64, PARALLEL_MIN)
        assert set(orders) <= {0, 1}, f"a job of cost TF_PARALLEL_MIN ran on parts {sorted(orders)}"
        assert sorted(sum(orders.values(), [])) == list(range(chunks))


@pytest.mark.parametrize("rows", [2, 3, 5, 7, 17, 40])
def test_fewer_rows_than_threads_or_odd_counts_are_split_right(threads, rows):
    """Row kernels split rows: with few long rows each thread may get one row or none."""
    # 4 TF_PARALLEL_MIN of work pays for 8 threads (tf_threads_for): all 7 take part, more threads than rows
    x = np.random.default_rng(rows).standard_normal((rows, 4 * PARALLEL_MIN // rows + 11)).astype(np.float32)
    threads(7)
    out = np.full_like(x, np.nan)
    native.lib.tf_softmax_f32(native.ffi.from_buffer("float[]", x), native.ffi.from_buffer("float[]", out), *x.shape)
    e = np.exp(x.astype(np.float64) - x.max(1, keepdims=True))
    np.testing.assert_allclose(out, e / e.sum(1, keepdims=True), rtol=1e-5, atol=1e-12)


def test_the_cross_entropy_does_not_depend_on_the_thread_count(threads):
    rng = np.random.default_rng(0)
    logits = rng.standard_normal((PARALLEL_MIN // 10 + 3, 10)).astype(np.float32)
    labels = rng.integers(0, 10, len(logits)).astype(np.int64)

    def loss():
        out = native.ffi.new("double *")
        scratch = np.empty_like(logits)
        ptr = native.ffi.from_buffer
        bad = native.lib.tf_softmax_xent_f32(ptr("float[]", logits), ptr("int64_t[]", labels), logits.shape[0],
                                             logits.shape[1], ptr("float[]", scratch), out)
        assert bad == -1
        return out[0]
    threads(1)
    one = loss()
    threads(2)
    assert loss() == one  # row losses are summed in row order, not in the order threads finish


def test_kernels_called_from_many_python_threads_at_once_are_all_right(threads):
    threads(2)
    rng = np.random.default_rng(1)
    arrays = [rng.standard_normal(PARALLEL_MIN + 1000 * k).astype(np.float32) for k in range(8)]
    expected = [1 / (1 + np.exp(-a.astype(np.float64))) for a in arrays]
    failures = []

    def work(k):
        for _ in range(5):
            if not np.allclose(sigmoid(arrays[k]), expected[k], rtol=1e-6, atol=0):
                failures.append(k)
    workers = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    for t in workers:
        t.start()
    for t in workers:
        t.join(60)
    assert not any(t.is_alive() for t in workers), "a kernel call never returned (pool deadlock)"
    assert not failures


def _child_sigmoid(queue):
    x = np.linspace(-5, 5, PARALLEL_MIN * 2, dtype=np.float32)
    queue.put(float(np.abs(sigmoid(x) - 1 / (1 + np.exp(-x.astype(np.float64)))).max()))


def test_a_forked_child_starts_its_own_workers(threads):
    threads(2)
    sigmoid(np.zeros(PARALLEL_MIN * 2, np.float32))  # the parent's workers are running
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    child = context.Process(target=_child_sigmoid, args=(queue,))
    child.start()
    child.join(60)
    assert child.exitcode == 0, "the forked child hung or died running a parallel kernel"
    assert queue.get(timeout=5) < 1e-6


def pool_workers_allowed_cpus():
    """{thread id: the CPUs it may run on} for this process's pool workers (threads named tinyflow-pool)."""
    allowed = {}
    for tid in os.listdir("/proc/self/task"):
        with open(f"/proc/self/task/{tid}/comm") as comm:
            if comm.read().strip() == "tinyflow-pool":
                allowed[int(tid)] = os.sched_getaffinity(int(tid))
    return allowed


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="thread affinity is read from Linux's /proc")
def test_workers_are_kept_off_the_cpu_of_the_thread_that_calls_the_kernel(threads):
    """A worker woken on the caller's CPU waits for it (an idle virtual CPU looks preempted to the scheduler):
    each parallel kernel keeps the workers off the caller's CPU, and only that one."""
    mine = os.sched_getaffinity(0)
    if len(mine) < 2:
        pytest.skip(f"this process may run on one CPU only ({sorted(mine)}): nothing to keep the workers off")
    threads(2)
    for cpu in sorted(mine)[:2]:
        os.sched_setaffinity(0, {cpu})  # the caller (this thread) on one CPU
        try:
            sigmoid(np.zeros(PARALLEL_MIN * 2, np.float32))
        finally:
            os.sched_setaffinity(0, mine)
        workers = pool_workers_allowed_cpus()
        assert workers, "no thread named tinyflow-pool after a parallel kernel"
        for tid, allowed in workers.items():
            assert allowed == mine - {cpu}, f"worker {tid} may run on {sorted(allowed)}, caller on CPU {cpu}"


def pool_workers_cpu_seconds():
    """{thread id: seconds on a CPU so far} for this process's pool workers (the scheduler's nanosecond count)."""
    return {tid: int(open(f"/proc/self/task/{tid}/schedstat").read().split()[0]) * 1e-9
            for tid in pool_workers_allowed_cpus()}


@pytest.mark.skipif(not os.path.exists(f"/proc/self/task/{os.getpid()}/schedstat"),
                    reason="the kernel does not report threads' CPU time in /proc/<pid>/task/<tid>/schedstat")
def test_idle_workers_stop_spinning_and_sleep_within_milliseconds(threads):
    """A worker spins after a job (1 ms at most while no thread of the process is preempted, 20 µs after one is),
    then sleeps: over the next 200 ms it must use the CPU for a few milliseconds at most, not hold it as
    OpenBLAS's threads do for ~0.1 s."""
    threads(2)
    sigmoid(np.zeros(PARALLEL_MIN * 2, np.float32))  # starts the workers
    for _ in range(3):
        sigmoid(np.zeros(PARALLEL_MIN * 2, np.float32))
        before = pool_workers_cpu_seconds()
        time.sleep(0.2)
        after = pool_workers_cpu_seconds()
        assert before, "no thread named tinyflow-pool after a parallel kernel"
        for tid, seconds in before.items():
            assert after[tid] - seconds < 0.005, f"worker {tid} used {(after[tid] - seconds) * 1e3:.1f} ms of CPU idle"


TORCH_FIRST = """
import os, sys
import torch
torch.set_num_threads(2)
torch.ones(1000, 1000) @ torch.ones(1000, 1000)   # torch's OpenMP threads exist and have worked
import numpy as np
import tinyflow as tfl
from tinyflow.backends import native
x = np.random.default_rng(0).standard_normal((512, 1024)).astype(np.float32)
w = tfl.Placeholder((None, 1024), name="x")
y = tfl.reduce_sum(tfl.sigmoid(w) * 2.0 + tfl.relu(w))
with tfl.Session(backend="c") as sess:
    for _ in range(4):  # the third run compiles the fused kernel
        value = sess.run(y, {w: x})
expected = (2 / (1 + np.exp(-x.astype(np.float64))) + np.maximum(x, 0)).sum()
assert abs(value - expected) <= 1e-4 * abs(expected), (value, expected)
report = native.thread_report()
assert report["tinyflow"]["runtime"].startswith("tinyflow thread pool"), report
assert report["tinyflow"]["threads"] == 2 and report["tinyflow"]["workers started"] >= 1, report
others = [o["filepath"] for o in report["others"]]
assert any("torch" in path and "gomp" in path for path in others), others  # torch's runtime, reported as another's
maps = open("/proc/self/maps").read()
ours = [line.split()[-1] for line in maps.splitlines() if "_ckernels" in line or "tf_fused_" in line]
assert ours, "tinyflow's libraries are not mapped"
print("ok", value)
"""


def test_with_torch_imported_first_the_c_backend_is_right_and_reports_its_own_pool(tmp_path):
    pytest.importorskip("torch", reason="needs torch (pip install torch==2.13.0)")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path), TINYFLOW_NUM_THREADS="2",
               OMP_WAIT_POLICY="ACTIVE", TINYFLOW_CACHE_DIR=str(tmp_path))  # any OMP_* setting is fine
    result = subprocess.run([sys.executable, "-c", TORCH_FIRST], capture_output=True, text=True, env=env,
                            timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.startswith("ok")


def test_info_names_the_pool_and_its_threads(capsys):
    from tinyflow.cli import main
    assert main(["info"]) == 0
    out = capsys.readouterr().out
    assert "tinyflow thread pool" in out and "thread(s)" in out


def test_info_warns_when_the_pools_hold_more_threads_than_the_cores(monkeypatch):
    from tinyflow.cli import oversubscription
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    pools = {"tinyflow": {"threads": 2}, "others": [{"user_api": "blas", "internal_api": "openblas", "num_threads": 2}]}
    warning = oversubscription(pools)
    assert "4 pool threads (tinyflow 2 + openblas 2) for 2 core(s)" in warning and "OPENBLAS_NUM_THREADS=1" in warning
    pools["others"][0]["num_threads"] = 0
    assert oversubscription(pools) == ""


def test_no_kernel_asks_an_openmp_runtime_for_threads():
    """`#pragma omp parallel` is ignored by this build (-fopenmp-simd): a kernel using it would run on one thread."""
    import pathlib
    sources = pathlib.Path(__file__).resolve().parents[2] / "ckernels"
    offenders = [f"{path.relative_to(sources)}:{number}" for path in sorted(sources.rglob("*.[ch]"))
                 if path.name != "threads.c"
                 for number, line in enumerate(path.read_text().splitlines(), 1)
                 if "omp parallel" in line or "omp_get_" in line or "omp critical" in line]
    assert not offenders, (f"these lines ask OpenMP for threads, which tinyflow's kernels do not use: {offenders}; "
                           "run the loop with tf_parallel_for (ckernels/src/threads.c), as the other kernels do")
