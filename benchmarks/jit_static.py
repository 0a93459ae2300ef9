"""Static vs eager training steps: tfl.jit.to_static against tinyflow eager mode, on the same step.

    python benchmarks/jit_static.py [--threads 2] [--repeats 15]   (the same as run.py --only J1,J2)

J1: Boston MLP 13-64-64-1 (relu, MSE, SGD) one step at batch 32; J2: digits convnet (conv 1->8 3x3,
relu, max-pool 2, linear 128->10, softmax cross-entropy, SGD) one step at batch 64.
Candidates, timed interleaved in one run (medians), all computing the same loss function from the
same initial parameters (checked on the first step):
* eager: parameters are tfl.tensor(..., requires_grad=True), the step runs the loss on Tensors
  (each op computes at once and records its grad_fn), loss.backward(), and an eager SGD step
  (tfl.optim.SGD(params, lr=...): zero_grad(), step());
* to_static: the same loss function and a graph-mode SGD minimize inside a tfl.jit.to_static step:
  traced once, then the cached plan (fed eager Tensors, returning the loss as a Tensor);
* graph mode: the TF1 way, a hand-built graph and sess.run (the floor to_static should reach);
* pytorch eager (informative): the same network as torch.nn modules with torch.optim.SGD.
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

RNG = np.random.default_rng(0)
EAGER = "eager (tfl.tensor, backward, step)"
TORCH = "pytorch eager (nn modules, torch.optim.SGD)"


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


def torch_step(name, initial, x_val, y_val, lr):
    """The same network and step as a PyTorch user writes it, starting from the same parameters."""
    import torch
    nn = torch.nn
    if name == "J1":
        net, criterion = nn.Sequential(nn.Linear(13, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 1)), \
            nn.MSELoss()
        weights = [initial[0].T, initial[1], initial[2].T, initial[3], initial[4].T, initial[5]]
    else:
        net = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(128, 10))
        criterion = nn.CrossEntropyLoss()
        weights = [initial[0], initial[1], initial[2].T, initial[3]]
    with torch.no_grad():
        for param, value in zip(net.parameters(), weights):
            param.copy_(torch.from_numpy(np.ascontiguousarray(value)))
    opt = torch.optim.SGD(net.parameters(), lr)
    x, y = torch.from_numpy(x_val), torch.from_numpy(y_val)

    def step():
        opt.zero_grad()
        loss = criterion(net(x), y)
        loss.backward()
        opt.step()
        return loss
    return step


def candidates(name, torch=None, lr=0.01):
    """{candidate: one training step}; every candidate's first step gives the same loss (checked)."""
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
    if torch is not None:
        out[TORCH] = torch_step(name, initial, x_val, y_val, lr)
    # the first step of each starts from the same parameters: the same loss, or the rows are not comparable
    firsts = {"tfl.jit.to_static": first, **{n: _number(step()) for n, step in out.items() if n != "tfl.jit.to_static"}}
    if not np.allclose(list(firsts.values()), firsts[EAGER], rtol=1e-4):
        raise AssertionError(f"{name}: the candidates disagree on the first loss: {firsts}")
    return out


def _number(loss):
    """A step's loss as a float, whichever library returned it."""
    return float(loss.detach()) if hasattr(loss, "detach") else float(loss)


TITLES = {"J1": "static vs eager: Boston MLP 13-64-64-1, one SGD step at batch 32",
          "J2": "static vs eager: digits convnet, one SGD step at batch 64"}


if __name__ == "__main__":
    import run
    sys.exit(run.main(["--only", "J1,J2", *sys.argv[1:]]))
