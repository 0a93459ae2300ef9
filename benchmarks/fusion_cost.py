"""What a fused kernel costs before it pays: the first compile, and a later process finding it on disk."""
import json
import os
import shutil
import subprocess
import sys
import tempfile

SCRIPT = """
import json, time, numpy as np, tinyflow as tfl
from tinyflow.backends.compiler import STATS
x = tfl.Placeholder((1000,), name="x")
y = 2.0 * tfl.sigmoid(1.5 * x - 0.5) + tfl.tanh(x) * 0.25
sess = tfl.Session(backend="c")
feed = {x: np.ones(1000, np.float32)}
start = time.perf_counter(); sess.run(y, feed); first = time.perf_counter() - start
start = time.perf_counter(); sess.run(y, feed); second = time.perf_counter() - start
print(json.dumps(dict(STATS, first_run=first, second_run=second)))
"""


def measure():
    """{'first compile': seconds, 'cache hit (new process)': seconds, ...} from two fresh processes."""
    folder = tempfile.mkdtemp(prefix="tinyflow-bench-cache-")
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, TINYFLOW_CACHE_DIR=folder, TINYFLOW_FUSION_JIT_AFTER="0",
               PYTHONPATH=os.pathsep.join([here, os.environ.get("PYTHONPATH", "")]))

    def child():
        out = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, check=True)
        return json.loads(out.stdout.strip().splitlines()[-1])
    try:
        cold, warm = child(), child()
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return {"first run, compiling the kernel": cold["first_run"], "of which cffi + gcc": cold["compile_seconds"],
            "first run in a new process, kernel on disk": warm["first_run"],
            "of which loading the library": warm["load_seconds"], "a later run": warm["second_run"]}


if __name__ == "__main__":
    for name, seconds in measure().items():
        print(f"{name:<45} {seconds * 1e3:8.2f} ms")
