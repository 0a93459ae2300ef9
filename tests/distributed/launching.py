"""Run a worker script under `tinyflow launch -n N` from a test, with this worktree's tinyflow and a time limit."""
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]


def _mpi_or_skip():
    pytest.importorskip("mpi4py", reason="the distributed tests need mpi4py (pip install -e '.[mpi]')")
    from tinyflow.distributed.mpi import find_mpirun
    from tinyflow.errors import TinyflowError
    try:
        find_mpirun()
    except TinyflowError as err:
        pytest.skip(f"no MPI launcher: {err}")


def environment(**extra):
    """This worktree's tinyflow first on the path, the test's backend, one OpenMP thread per process."""
    path = [str(ROOT), str(HERE), os.environ.get("PYTHONPATH", "")]  # HERE: workers import problems.py
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(path))
    env.setdefault("OMP_NUM_THREADS", "1")
    env.update({k: str(v) for k, v in extra.items()})
    return env


def launch(tmp_path, source, n, *args, timeout=90, check=True, env=None, via_cli=False, mpirun_flags=()):
    """Write `source` to a script in tmp_path and run it in n processes; returns the CompletedProcess."""
    _mpi_or_skip()
    script = tmp_path / f"worker_{abs(hash(source)) % 10**8}.py"
    script.write_text(textwrap.dedent(source))
    if via_cli:
        cmd = [sys.executable, "-m", "tinyflow", "launch", "-n", str(n), str(script), *map(str, args)]
    else:  # the same command line, without paying for one more Python start-up
        from tinyflow.distributed.mpi import command
        cmd = command(n, [str(script), *map(str, args)])
        cmd[1:1] = list(mpirun_flags)
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=tmp_path,
                            env=environment(**(env or {})))
    if check and result.returncode != 0:
        raise AssertionError(f"launch -n {n} failed with status {result.returncode}:\n"
                             f"stdout:\n{result.stdout}\nstderr:\n{result.stderr[-4000:]}")
    return result
