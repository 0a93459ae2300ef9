"""tfl.distributed collectives over real MPI processes, and their errors in a single process."""
import sys

import numpy as np
import pytest

import tinyflow as tfl
from launching import launch


WORKER = """
import json, sys
import numpy as np
import tinyflow as tfl
d = tfl.distributed
env_rank, env_size = d.rank(), d.world_size()        # from the launcher, before init
d.init()
r, w = d.rank(), d.world_size()
assert (env_rank, env_size) == (r, w), (env_rank, env_size, r, w)
x = np.arange(5, dtype=np.float32) * (r + 1)
same = d.all_reduce(x, "sum")
assert same is x                                      # reduced in place
np.testing.assert_array_equal(x, np.arange(5) * sum(range(1, w + 1)))
np.testing.assert_allclose(d.all_reduce(np.full(3, float(r)), "mean"), np.full(3, (w - 1) / 2))
assert d.all_reduce(np.array([r], np.int64), "max")[0] == w - 1
assert d.all_reduce(np.array([r], np.int64), "min")[0] == 0
ints = d.all_reduce(np.array([r, 1], np.int32), "mean")      # integers averaged: a new float array
np.testing.assert_allclose(ints, [(w - 1) / 2, 1.0])
view = np.arange(12.0).reshape(3, 4)[:, 1]                    # not contiguous: reduced in a copy
np.testing.assert_array_equal(d.all_reduce(view, "sum"), view * w)
assert float(d.all_reduce(2.5, "sum")) == 2.5 * w              # Python numbers work too
b = d.broadcast(np.array([10.0, 20.0]) if r == w - 1 else None, root=w - 1)
np.testing.assert_array_equal(b, [10.0, 20.0])
mine = np.full((3, 2), float(r))
assert d.broadcast(mine) is mine and (mine == 0).all()
gathered = d.all_gather(np.full((r + 1, 2), r, np.int64))    # first dimensions may differ
np.testing.assert_array_equal(gathered[:, 0], np.repeat(np.arange(w), np.arange(1, w + 1)))
np.testing.assert_array_equal(d.all_gather(np.float64(r)), np.arange(w))
if w > 1:
    try:
        d.broadcast(np.zeros(r + 2))
        raise SystemExit("broadcast of different shapes should fail")
    except d.DistributedError as err:
        assert "rank 0: broadcast(root=0) of shape (2,) float64" in str(err), err
else:  # alone, the root passing None is refused at once (with others, test_faults checks every rank raises)
    try:
        d.broadcast(None)
        raise SystemExit("broadcast of None from the root should fail")
    except d.DistributedError as err:
        assert "this process is the root (rank 0), so it must pass the array" in str(err), err
d.barrier()
print(json.dumps({"rank": r, "stats": d.communication_stats()}))
"""


@pytest.mark.parametrize("n", [2, 3])
def test_collectives_give_the_same_correct_values_on_every_process(tmp_path, n):
    result = launch(tmp_path, WORKER, n, via_cli=n == 3)
    # every rank got through all the checks (MPICH may interleave the ranks' lines)
    assert sorted(f'"rank": {r},' in result.stdout for r in range(n)) == [True] * n, result.stdout


def _run_alone(tmp_path, name, source):
    """The finished process of `source` run as one plain Python process (no launcher)."""
    import subprocess
    from launching import environment
    pytest.importorskip("mpi4py", reason="needs mpi4py")
    script = tmp_path / name
    script.write_text(source)
    return subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60,
                          env=environment(), cwd=tmp_path)


def test_a_single_process_without_a_launcher_is_a_group_of_one(tmp_path):
    result = _run_alone(tmp_path, "single.py", WORKER)
    assert result.returncode == 0, result.stderr
    assert '"rank": 0' in result.stdout


def test_collectives_before_init_say_to_call_init():
    assert not tfl.distributed.is_initialized()
    for call in (lambda: tfl.distributed.all_reduce(np.ones(2)), tfl.distributed.barrier,
                 lambda: tfl.distributed.broadcast(np.ones(2)), lambda: tfl.distributed.all_gather(np.ones(2))):
        with pytest.raises(tfl.TinyflowError, match=r"tfl.distributed.init\(\)"):
            call()


def test_without_mpi4py_init_says_how_to_install_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "mpi4py", None)  # import mpi4py now raises ImportError
    with pytest.raises(tfl.TinyflowError, match=r'pip install -e "\.\[mpi\]"'):
        tfl.distributed.init()
    assert not tfl.distributed.is_initialized()


def test_rank_and_world_size_come_from_the_launchers_environment(monkeypatch):
    for name in ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "PMI_RANK", "PMI_SIZE", "PMIX_RANK",
                 "SLURM_PROCID", "SLURM_NTASKS"):
        monkeypatch.delenv(name, raising=False)
    assert (tfl.distributed.rank(), tfl.distributed.world_size()) == (0, 1)
    monkeypatch.setenv("PMI_RANK", "3")
    monkeypatch.setenv("PMI_SIZE", "4")
    assert (tfl.distributed.rank(), tfl.distributed.world_size()) == (3, 4)
    monkeypatch.setenv("OMPI_COMM_WORLD_RANK", "1")
    monkeypatch.setenv("OMPI_COMM_WORLD_SIZE", "2")
    assert (tfl.distributed.rank(), tfl.distributed.world_size()) == (1, 2)


def test_bad_arguments_are_refused_before_any_communication():
    with pytest.raises(tfl.TinyflowError, match="one of"):
        tfl.distributed.all_reduce(np.ones(2), op="product")


def test_a_bad_timeout_or_optimizer_raises_distributed_error(monkeypatch):
    for timeout in ("a", True, float("nan"), 0, -1.0, [5]):
        with pytest.raises(tfl.distributed.DistributedError, match="positive number of seconds"):
            tfl.distributed.init(timeout=timeout)
    monkeypatch.setenv("TINYFLOW_COLLECTIVE_TIMEOUT", "ten minutes")
    with pytest.raises(tfl.distributed.DistributedError, match="TINYFLOW_COLLECTIVE_TIMEOUT.*'ten minutes'"):
        tfl.distributed.init()
    assert not tfl.distributed.is_initialized()
    with pytest.raises(tfl.distributed.DistributedError, match="wraps a tfl.optim optimizer, got None"):
        tfl.distributed.DistributedOptimizer(None)


ROOTS = """
import tinyflow as tfl
tfl.distributed.init()
for call in (lambda: tfl.distributed.broadcast([1.0], root="a"), lambda: tfl.distributed.broadcast([1.0], root=1),
             lambda: tfl.distributed.broadcast_object(1, root=5), lambda: tfl.distributed.broadcast_object(1, root=-1)):
    try:
        call()
    except tfl.distributed.DistributedError as err:
        print(err)
"""


def test_a_root_that_is_not_a_rank_raises_distributed_error(tmp_path):
    result = _run_alone(tmp_path, "roots.py", ROOTS)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines == [f"{what} root {root} is not a rank of this 1-process group; pass an int in 0..0"
                     for what, root in (("broadcast", "'a'"), ("broadcast", 1), ("broadcast_object", 5),
                                        ("broadcast_object", -1))], result.stdout
