"""Static vs eager training steps: tfl.jit.to_static against tinyflow eager mode, on the same step.

    python benchmarks/jit_static.py [--repeats 15]

J1: Boston MLP 13-64-64-1 (relu, MSE, SGD) one step at batch 32; J2: digits convnet (conv 1->8 3x3,
relu, max-pool 2, linear 128->10, softmax cross-entropy, SGD) one step at batch 64.
Candidates, timed interleaved in one run (medians), all computing the same loss function:
* eager: parameters are tfl.tensor(..., requires_grad=True), the step runs the loss on Tensors
  (each op computes at once and records its grad_fn), loss.backward(), and an eager SGD step
  (tfl.optim.SGD(params, lr=...): zero_grad(), step());
* to_static: the same loss function and a graph-mode SGD minimize inside a tfl.jit.to_static step:
  traced once, then the cached plan (fed eager Tensors, returning the loss as a Tensor);
* graph mode: the TF1 way, a hand-built graph and sess.run (the floor to_static should reach).
"""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import configure_threads, fmt_time, interleaved, print_table, summary  # noqa: E402

RNG = np.random.default_rng(0)
EAGER = "eager (tfl.tensor, backward, step)"


def mlp_forward(params, x):
    w1, b1, w2, b2, w3, b3 = params
    import tinyflow as tfl
    h = tfl.relu(tfl.matmul(x, w1) + b1)
    h = tfl.relu(tfl.matmul(h, w2) + b2)
    return tfl.matmul(h, w3) + b3


def mlp_loss(params, x, y):
    import tinyflow as tfl
    return tfl.nn.mse_loss(mlp_forward(params, x), y)


def conv_loss(params, x, y):
    import tinyflow as tfl
    w, b, v, c = params
    h = tfl.max_pool2d(tfl.relu(tfl.conv2d(x, w, padding=1) + tfl.reshape(b, (1, -1, 1, 1))), 2)
    return tfl.nn.softmax_cross_entropy(tfl.matmul(tfl.reshape(h, (-1, 128)), v) + c, y)


def workload(name):
    """(loss function, initial parameters, x batch, y batch)."""
    if name == "J1":
        shapes = [(13, 64), (64,), (64, 64), (64,), (64, 1), (1,)]
        x, y = RNG.standard_normal((32, 13)), RNG.standard_normal((32, 1))
        return mlp_loss, shapes, x.astype(np.float32), y.astype(np.float32)
    shapes = [(8, 1, 3, 3), (8,), (128, 10), (10,)]
    x, y = RNG.standard_normal((64, 1, 8, 8)).astype(np.float32), RNG.integers(0, 10, 64)
    return conv_loss, shapes, x, y


def candidates(name, lr=0.01):
    import tinyflow as tfl
    loss_fn, shapes, x_val, y_val = workload(name)
    initial = [(RNG.standard_normal(s) * 0.1).astype(np.float32) for s in shapes]
    out = {}

    params = [tfl.tensor(p, requires_grad=True) for p in initial]
    eager_opt = tfl.optim.SGD(params, lr=lr)
    x_tensor, y_tensor = tfl.tensor(x_val), tfl.tensor(y_val)

    def eager_step():
        eager_opt.zero_grad()
        loss = loss_fn(params, x_tensor, y_tensor)
        loss.backward()
        eager_opt.step()
        return loss
    out[EAGER] = eager_step

    with tfl.Graph().as_default():
        variables = [tfl.Variable(p) for p in initial]
        opt = tfl.optim.SGD(lr)

        @tfl.jit.to_static
        def train_step(x, y):
            loss = loss_fn(variables, x, y)
            opt.minimize(loss)
            return loss
        first = float(train_step(x_tensor, y_tensor))  # traced in this graph, with its Variables
        out["tfl.jit.to_static"] = lambda: train_step(x_tensor, y_tensor)

    with tfl.Graph().as_default() as graph:
        variables = [tfl.Variable(p) for p in initial]
        x = tfl.Placeholder(x_val.shape, x_val.dtype)
        y = tfl.Placeholder(y_val.shape, y_val.dtype)
        loss = loss_fn(variables, x, y)
        train = tfl.optim.SGD(lr).minimize(loss)
        sess = tfl.Session(graph)
        out["graph mode (sess.run)"] = lambda: sess.run([loss, train], {x: x_val, y: y_val})[0]
    # the first step of each starts from the same parameters: the same loss, or the rows are not comparable
    firsts = {"tfl.jit.to_static": first, **{n: float(step()) for n, step in out.items() if n != "tfl.jit.to_static"}}
    if not np.allclose(list(firsts.values()), firsts[EAGER], rtol=1e-4):
        raise AssertionError(f"{name}: the candidates disagree on the first loss: {firsts}")
    return out


TITLES = {"J1": "Boston MLP 13-64-64-1, one SGD step at batch 32",
          "J2": "digits convnet, one SGD step at batch 64"}
TARGETS = {"J1": 0.5}  # to_static step <= 0.5x the eager step


def report(repeats=15):
    """Time every candidate of J1 and J2 interleaved; print tables and the to_static/eager ratios."""
    import tinyflow as tfl
    tfl.eager.set_backend(None)  # eager on the Session's default backend (the E rows may have left OpenCL on)
    ratios = {}
    for key, title in TITLES.items():
        times = interleaved(candidates(key), repeats=repeats, warmup=2)
        stats = {n: summary(t) for n, t in times.items()}
        ref = stats[EAGER][0]
        rows = [[n, fmt_time(m), f"±{fmt_time(q)}", f"{m / ref:.3f}x"] for n, (m, q) in stats.items()]
        print_table(f"{key}: {title} (ratio to the eager step)", ["candidate", "median", "IQR", "ratio"], rows)
        ratios[key] = stats["tfl.jit.to_static"][0] / ref
        if key in TARGETS:
            verdict = "meets" if ratios[key] <= TARGETS[key] else "MISSES"
            print(f"target: to_static step <= {TARGETS[key]}x eager step: {ratios[key]:.3f}x, {verdict} it")
    return ratios


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    configure_threads(args.threads)
    report(args.repeats)
