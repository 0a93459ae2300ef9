"""Running a small graph so that every table kernel really runs (the small-array threshold at 0)."""
import numpy as np

import tinyflow as tfl


def run_kernels(backend, build, inputs, kernel=None):
    """build(*placeholders) fed `inputs` on `backend` with threshold 0; asserts `kernel` ran if given."""
    with tfl.Graph().as_default():
        placeholders = [tfl.Placeholder(v.shape, v.dtype) for v in inputs]
        out = build(*placeholders)
        with tfl.Session(backend=backend) as sess:
            sess.backend.small_size = 0
            with np.errstate(all="ignore"):  # NaN and inf are what these runs are about
                value = sess.run(out, dict(zip(placeholders, inputs)))
            if kernel is not None and backend != "numpy":
                assert sess.backend.report.kernel_ops[kernel] > 0, f"{kernel} did not run on {backend}"
    return value
