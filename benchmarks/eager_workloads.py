"""Eager-mode workloads: tinyflow Tensors against PyTorch eager (and numpy by hand) on the same programs.

E1 is W1b (a chain of 1,000 adds on 4x4, forward and backward) written eagerly: it
measures the per-op overhead of recording and replaying the backward graph. E2 is
W2 (the Boston MLP, one epoch at batch 32, Adam) written as PyTorch users do.
Each tinyflow row runs eager mode on that backend (`tfl.eager.set_backend`).
"""
import numpy as np

import tinyflow as tfl
import workloads
from workloads import NumpyMLP, _torch_mlp, torch


def _on(backend, fn):
    """fn, run with eager ops on `backend`."""
    def run():
        tfl.eager.set_backend(backend)
        return fn()
    return run


def e1_chain_eager():
    """1,000 adds on a 4x4 Tensor, then backward to the input; numpy and PyTorch rows are W1b's own."""
    out = {name: fn for name, fn in workloads.w1_chain(backward=True).items() if not name.startswith("tinyflow")}
    x_val = workloads.RNG.standard_normal((4, 4)).astype(np.float32)
    c_val = workloads.RNG.standard_normal((4, 4)).astype(np.float32)
    x, c = tfl.tensor(x_val, requires_grad=True), tfl.tensor(c_val)

    def tinyflow_eager():
        y = x
        for _ in range(1000):
            y = y + c
        x.grad = None
        y.sum().backward()
    for backend in workloads.tinyflow_backends():
        out[f"tinyflow {backend}"] = _on(backend, tinyflow_eager)
    return out


def _tinyflow_eager_mlp(sizes, lr):
    net = tfl.nn.Sequential(*[tfl.nn.Linear(a, b, act="relu" if i + 2 < len(sizes) else None)
                              for i, (a, b) in enumerate(zip(sizes, sizes[1:]))])
    opt = tfl.optim.Adam(net.parameters(), lr=lr)

    def step(x, y):
        opt.zero_grad()
        loss = tfl.nn.mse_loss(net(x), y)
        loss.backward()
        opt.step()
        return loss
    return step


def e2_boston_eager():
    """Boston MLP 13-64-64-1, relu, MSE, Adam: one epoch at batch 32 over 404 rows, eagerly."""
    X, y = tfl.data.load_boston()
    X = ((X - X.mean(0)) / X.std(0)).astype(np.float32)[:404]
    y = y.astype(np.float32)[:404, None]
    batches = [(X[i:i + 32], y[i:i + 32]) for i in range(0, 404, 32)]
    sizes = (13, 64, 64, 1)
    out = {}
    model = NumpyMLP(sizes, "mse", "adam", 1e-3)
    out["numpy by hand"] = lambda: [model.step(xb, yb) for xb, yb in batches]
    if torch is not None:
        step = _torch_mlp(sizes, "mse", "adam", 1e-3)
        tbatches = [(torch.from_numpy(xb), torch.from_numpy(yb)) for xb, yb in batches]
        out["pytorch eager"] = lambda: [step(xb, yb) for xb, yb in tbatches]
    tensors = [(tfl.tensor(xb), tfl.tensor(yb)) for xb, yb in batches]
    for backend in workloads.tinyflow_backends():
        step_tf = _tinyflow_eager_mlp(sizes, 1e-3)
        out[f"tinyflow {backend}"] = _on(backend, (lambda s: lambda: [s(xb, yb) for xb, yb in tensors])(step_tf))
    return out
