"""A failing or stuck process ends the whole job with a non-zero status and a readable error (no hang)."""
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
