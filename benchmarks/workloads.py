"""The workloads of the performance suite, each written as its users would write it.

* numpy by hand: forward, manual backprop and the optimizer in plain numpy, the floor;
* PyTorch eager (when installed): what a PyTorch user writes: `torch.nn` modules (a plain
  `nn.Sequential`), `torch.optim`, input tensors made once before timing;
* fused C loop (W4, W6): the hand-written loop of reference_loops.c, built with the best flags;
* tinyflow: the graph built once, then `sess.run` per step, on each available backend.

Every factory returns {candidate name: zero-argument callable doing one unit of work}.
All data is float32 and made from fixed seeds (tables.py reseeds RNG before each table).
Import this module only after torch and tinyflow were imported in the order being measured.
"""
import os

import numpy as np

import tinyflow as tfl

try:
    import torch
except ImportError:  # the PyTorch rows say "not installed"
    torch = None

RNG = np.random.default_rng(0)


def tinyflow_backends():
    """Backends to measure: every available one (OpenCL left out when run.py was given --skip-opencl)."""
    skip = os.environ.get("TINYFLOW_BENCH_SKIP_OPENCL") == "1"
    return [b for b in tfl.backends.available() if not (skip and b == "opencl")]


def _session(graph, backend):
    return tfl.Session(graph, backend=backend)


# --------------------------------------------------------------------------- W1
def w1_chain(backward):
    """1,000 adds on a 4x4 array; with `backward`, also the gradient of the sum wrt the input."""
    x_val = RNG.standard_normal((4, 4)).astype(np.float32)
    c_val = RNG.standard_normal((4, 4)).astype(np.float32)
    out = {}

    def numpy_by_hand():
        y = x_val
        for _ in range(1000):
            y = y + c_val
        if backward:
            loss = y.sum()
            grad = np.ones_like(y)  # every add passes the gradient on unchanged
            return loss, grad
        return y
    out["numpy by hand"] = numpy_by_hand

    if torch is not None:
        tx, tc = torch.from_numpy(x_val.copy()).requires_grad_(backward), torch.from_numpy(c_val)

        def torch_eager():
            y = tx
            for _ in range(1000):
                y = y + tc
            if backward:
                tx.grad = None
                y.sum().backward()
            return y
        out["pytorch eager"] = torch_eager

    for backend in tinyflow_backends():
        with tfl.Graph().as_default() as graph:
            x = tfl.Placeholder((4, 4), name="x")
            c = tfl.Constant(c_val)
            y = x
            for _ in range(1000):
                y = y + c
            fetches = [tfl.reduce_sum(y)] + tfl.gradients(tfl.reduce_sum(y), [x]) if backward else y
        out[f"tinyflow {backend}"] = _bind(_session(graph, backend), fetches, {"x": x_val})
    return out


def _bind(sess, fetches, feed):
    return lambda: sess.run(fetches, feed)


# --------------------------------------------------------------------------- MLPs (W2, W3)
def _init(shape):
    bound = 1 / np.sqrt(shape[0])
    return RNG.uniform(-bound, bound, shape).astype(np.float32)


class NumpyMLP:
    """A relu MLP with manual backprop, and Adam or SGD in numpy: the floor of W2 and W3."""

    def __init__(self, sizes, loss, optimizer, lr):
        self.params = []
        for a, b in zip(sizes, sizes[1:]):
            self.params += [_init((a, b)), np.zeros(b, np.float32)]
        self.loss, self.optimizer, self.lr, self.t = loss, optimizer, lr, 0
        self.m = [np.zeros_like(p) for p in self.params]
        self.v = [np.zeros_like(p) for p in self.params]

    def step(self, x, y):
        acts, pre = [x], []
        for i in range(0, len(self.params), 2):
            z = acts[-1] @ self.params[i] + self.params[i + 1]
            pre.append(z)
            acts.append(np.maximum(z, 0) if i + 2 < len(self.params) else z)
        out = acts[-1]
        if self.loss == "mse":
            diff = out - y
            loss = np.mean(diff * diff)
            grad = 2 * diff / diff.size
        else:  # softmax cross-entropy with integer labels
            shifted = out - out.max(1, keepdims=True)
            log_probs = shifted - np.log(np.exp(shifted).sum(1, keepdims=True))
            loss = -log_probs[np.arange(len(y)), y].mean()
            grad = np.exp(log_probs)
            grad[np.arange(len(y)), y] -= 1
            grad /= len(y)
        grads = [None] * len(self.params)
        for i in reversed(range(0, len(self.params), 2)):
            grads[i] = acts[i // 2].T @ grad
            grads[i + 1] = grad.sum(0)
            if i:
                grad = (grad @ self.params[i].T) * (pre[i // 2 - 1] > 0)
        self.update(grads)
        return loss

    def update(self, grads):
        if self.optimizer == "sgd":
            for p, g in zip(self.params, grads):
                p -= self.lr * g
            return
        self.t += 1
        for p, g, m, v in zip(self.params, grads, self.m, self.v):
            m *= 0.9
            m += 0.1 * g
            v *= 0.999
            v += 0.001 * g * g
            p -= (self.lr / (1 - 0.9 ** self.t)) * m / (np.sqrt(v) / np.sqrt(1 - 0.999 ** self.t) + 1e-8)


def _torch_mlp(sizes, loss, optimizer, lr):
    layers = []
    for i, (a, b) in enumerate(zip(sizes, sizes[1:])):
        layers.append(torch.nn.Linear(a, b))
        if i + 2 < len(sizes):
            layers.append(torch.nn.ReLU())
    net = torch.nn.Sequential(*layers)
    opt = torch.optim.Adam(net.parameters(), lr) if optimizer == "adam" else torch.optim.SGD(net.parameters(), lr)
    criterion = torch.nn.MSELoss() if loss == "mse" else torch.nn.CrossEntropyLoss()

    def step(x, y):
        opt.zero_grad()
        value = criterion(net(x), y)
        value.backward()
        opt.step()
        return value
    return step


def _tinyflow_mlp(sizes, loss, optimizer, lr, backend):
    with tfl.Graph().as_default() as graph:
        x = tfl.Placeholder((None, sizes[0]), name="x")
        layers = [tfl.nn.Linear(a, b, act="relu" if i + 2 < len(sizes) else None)
                  for i, (a, b) in enumerate(zip(sizes, sizes[1:]))]
        pred = tfl.nn.Sequential(*layers)(x)
        if loss == "mse":
            t = tfl.Placeholder((None, 1), name="t")
            value = tfl.nn.mse_loss(pred, t)
        else:
            t = tfl.Placeholder((None,), "int64", name="t")
            value = tfl.nn.softmax_cross_entropy(pred, t)
        opt = tfl.optim.Adam(lr) if optimizer == "adam" else tfl.optim.SGD(lr)
        train = opt.minimize(value)
    sess = _session(graph, backend)
    fetches = [train, value]
    return lambda xb, yb: sess.run(fetches, {"x": xb, "t": yb})


def _mlp_candidates(sizes, loss, optimizer, lr, batches):
    """{name: callable running every (x, y) batch once}, each model starting from its own fresh weights."""
    out = {}
    model = NumpyMLP(sizes, loss, optimizer, lr)
    out["numpy by hand"] = lambda: [model.step(xb, yb) for xb, yb in batches]
    if torch is not None:
        step = _torch_mlp(sizes, loss, optimizer, lr)
        tbatches = [(torch.from_numpy(xb), torch.from_numpy(yb)) for xb, yb in batches]
        out["pytorch eager"] = lambda: [step(xb, yb) for xb, yb in tbatches]
    for backend in tinyflow_backends():
        step_tf = _tinyflow_mlp(sizes, loss, optimizer, lr, backend)
        out[f"tinyflow {backend}"] = (lambda s: lambda: [s(xb, yb) for xb, yb in batches])(step_tf)
    return out


def w2_boston(full_batch):
    """Boston MLP 13-64-64-1, relu, MSE, Adam: an epoch of batch 32 over 404 rows, or one full-batch step."""
    X, y = tfl.data.load_boston()
    X = ((X - X.mean(0)) / X.std(0)).astype(np.float32)[:404]
    y = y.astype(np.float32)[:404, None]
    size = 404 if full_batch else 32
    batches = [(X[i:i + size], y[i:i + size]) for i in range(0, 404, size)]
    return _mlp_candidates((13, 64, 64, 1), "mse", "adam", 1e-3, batches)


def w3_wide_mlp():
    """784-1024-1024-10, softmax cross-entropy, SGD: one step at batch 256 (GEMM-bound)."""
    x = RNG.standard_normal((256, 784)).astype(np.float32)
    labels = RNG.integers(0, 10, 256)
    return _mlp_candidates((784, 1024, 1024, 10), "xent", "sgd", 0.01, [(x, labels)])


# --------------------------------------------------------------------------- W4
# The memory-bound tables time the reference loop twice, on arrays of its own each: the ratio of the
# second copy to the first is what a ratio in that run can resolve (a loop is as fast as itself).
SECOND_COPY = "fused C loop (second copy)"


def w4_fused_sigmoid(reference, n=10_000_000):
    """c * sigmoid(a*x + b) over n floats: numpy, the hand-fused C loop (reference_loops.c), PyTorch, tinyflow."""
    a, b, c = 1.5, -0.5, 2.0
    x = RNG.standard_normal(n).astype(np.float32)
    out, out_again = np.empty_like(x), np.empty_like(x)
    candidates = {
        "numpy by hand": lambda: c * (1 / (1 + np.exp(-(a * x + b)))),
        "fused C loop": reference.bind("reference_fused_sigmoid", x, out, n, a, b, c),
        SECOND_COPY: reference.bind("reference_fused_sigmoid", x, out_again, n, a, b, c),
    }
    if torch is not None:
        tx = torch.from_numpy(x)
        candidates["pytorch eager"] = lambda: c * torch.sigmoid(a * tx + b)
    for backend in tinyflow_backends():
        with tfl.Graph().as_default() as graph:
            xp = tfl.Placeholder((n,), name="x")
            y = c * tfl.sigmoid(a * xp + b)
        candidates[f"tinyflow {backend}"] = _bind(_session(graph, backend), y, {"x": x})
    expected = candidates["numpy by hand"]()
    candidates["fused C loop"]()
    agree("W4", {"fused C loop": out, **{name: np.asarray(fn()) for name, fn in candidates.items()
                                          if name not in ("numpy by hand", "fused C loop", SECOND_COPY)}}, expected)
    return candidates


def agree(table, results, expected, rtol=1e-4, atol=1e-6):
    """Every candidate computes the same values (within float32 rounding), or its timings mean nothing."""
    for name, got in results.items():
        if not np.allclose(got, expected, rtol=rtol, atol=atol):
            worst = np.max(np.abs(np.asarray(got, np.float64) - expected))
            raise AssertionError(f"{table}: {name} disagrees with numpy (largest difference {worst:g})")


# --------------------------------------------------------------------------- W5
def _digits():
    X, y = tfl.data.load_digits()
    X = (X / 16).astype(np.float32).reshape(-1, 1, 8, 8)
    X_train, _, y_train, _ = tfl.data.train_test_split(X, y, test_size=0.2, seed=0)
    return [(X_train[i:i + 64], y_train[i:i + 64]) for i in range(0, len(X_train), 64)]


class NumpyConvNet:
    """conv 1→8 3x3 pad 1, relu, max-pool 2, linear 128→10, softmax cross-entropy, Adam; by hand."""

    def __init__(self):
        self.params = [_init((9, 8)).T.reshape(8, 1, 3, 3).copy(), np.zeros(8, np.float32), _init((128, 10)),
                       np.zeros(10, np.float32)]
        self.m = [np.zeros_like(p) for p in self.params]
        self.v = [np.zeros_like(p) for p in self.params]
        self.t = 0

    def step(self, x, labels):
        w, b, W, c = self.params
        n = len(x)
        windows = np.lib.stride_tricks.sliding_window_view(np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1))), (3, 3),
                                                           axis=(2, 3))  # (n, 1, 8, 8, 3, 3)
        cols = windows.reshape(n, 8, 8, 9)
        conv = np.tensordot(cols, w.reshape(8, 9), axes=([3], [1])).transpose(0, 3, 1, 2) + b[:, None, None]
        act = np.maximum(conv, 0)
        blocks = act.reshape(n, 8, 4, 2, 4, 2).transpose(0, 1, 2, 4, 3, 5).reshape(n, 8, 4, 4, 4)
        first = blocks.argmax(-1)
        pooled = blocks.max(-1)
        flat = pooled.reshape(n, 128)
        logits = flat @ W + c
        shifted = logits - logits.max(1, keepdims=True)
        log_probs = shifted - np.log(np.exp(shifted).sum(1, keepdims=True))
        loss = -log_probs[np.arange(n), labels].mean()
        g = np.exp(log_probs)
        g[np.arange(n), labels] -= 1
        g /= n
        dW, dc = flat.T @ g, g.sum(0)
        dpooled = (g @ W.T).reshape(n, 8, 4, 4)
        dblocks = np.zeros((n, 8, 4, 4, 4), np.float32)
        np.put_along_axis(dblocks, first[..., None], dpooled[..., None], axis=-1)
        dact = dblocks.reshape(n, 8, 4, 4, 2, 2).transpose(0, 1, 2, 4, 3, 5).reshape(n, 8, 8, 8)
        dconv = dact * (conv > 0)
        dw = np.tensordot(dconv.transpose(1, 0, 2, 3), cols, axes=([1, 2, 3], [0, 1, 2])).reshape(8, 1, 3, 3)
        db = dconv.sum((0, 2, 3))
        self.t += 1
        for p, gr, m, v in zip(self.params, (dw, db, dW, dc), self.m, self.v):
            m *= 0.9
            m += 0.1 * gr
            v *= 0.999
            v += 0.001 * gr * gr
            p -= (1e-3 / (1 - 0.9 ** self.t)) * m / (np.sqrt(v) / np.sqrt(1 - 0.999 ** self.t) + 1e-8)
        return loss


def w5_convnet():
    """The digits convnet, one epoch at batch 64 with Adam."""
    batches = _digits()
    out = {}
    model = NumpyConvNet()
    out["numpy by hand"] = lambda: [model.step(xb, yb) for xb, yb in batches]
    if torch is not None:
        torch_net = torch.nn.Sequential(torch.nn.Conv2d(1, 8, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
                                        torch.nn.Flatten(), torch.nn.Linear(128, 10))
        opt = torch.optim.Adam(torch_net.parameters(), 1e-3)
        criterion = torch.nn.CrossEntropyLoss()
        tbatches = [(torch.from_numpy(xb), torch.from_numpy(yb)) for xb, yb in batches]

        def torch_epoch():
            for xb, yb in tbatches:
                opt.zero_grad()
                criterion(torch_net(xb), yb).backward()
                opt.step()
        out["pytorch eager"] = torch_epoch
    for backend in tinyflow_backends():
        with tfl.Graph().as_default() as graph:
            x = tfl.Placeholder((None, 1, 8, 8), name="x")
            t = tfl.Placeholder((None,), "int64", name="t")
            net = tfl.nn.Sequential(tfl.nn.Conv2D(1, 8, 3, padding=1, act="relu"), tfl.nn.MaxPool2D(2),
                                    tfl.nn.Flatten(), tfl.nn.Linear(128, 10))
            loss = tfl.nn.softmax_cross_entropy(net(x), t)
            train = tfl.optim.Adam(1e-3).minimize(loss)
        sess = _session(graph, backend)
        out[f"tinyflow {backend}"] = (lambda s, tr, lo: lambda: [s.run([tr, lo], {"x": xb, "t": yb})
                                                                  for xb, yb in batches])(sess, train, loss)
    return out


# --------------------------------------------------------------------------- W6
def w6_adam(reference, n=10_000_000):
    """One Adam step over n parameters with a given gradient."""
    g = RNG.standard_normal(n).astype(np.float32)
    out = {}
    p, m, v = (np.zeros(n, np.float32) for _ in range(3))
    state = {"t": 0}

    def numpy_by_hand():
        state["t"] += 1
        t = state["t"]
        m[:] = 0.9 * m + 0.1 * g
        v[:] = 0.999 * v + 0.001 * g * g
        p[:] = p - (1e-3 / (1 - 0.9 ** t)) * m / (np.sqrt(v) / np.sqrt(1 - 0.999 ** t) + 1e-8)
    out["numpy by hand"] = numpy_by_hand
    # the step count changes the bias correction, not the work: the loop runs at step 10 every time
    fp, fm, fv, ap, am, av = (np.zeros(n, np.float32) for _ in range(6))
    out["fused C loop"] = reference.bind("reference_adam", fp, g, fm, fv, n, 1e-3, 0.9, 0.999, 1e-8, 10)
    out[SECOND_COPY] = reference.bind("reference_adam", ap, g, am, av, n, 1e-3, 0.9, 0.999, 1e-8, 10)
    check_adam("W6", reference, g[:1000])
    if torch is not None:
        out["pytorch eager"] = _torch_adam(n, g)
        out["pytorch eager, Adam(fused=True)"] = _torch_adam(n, g, fused=True)
    for backend in tinyflow_backends():
        with tfl.Graph().as_default() as graph:
            w = tfl.Variable(np.zeros(n, np.float32), name="w")
            grad = tfl.Placeholder((n,), name="grad")
            train = tfl.optim.Adam(1e-3).apply_gradients([(grad, w)])
        out[f"tinyflow {backend}"] = _bind(_session(graph, backend), train, {"grad": g})
    return out


def check_adam(table, reference, g):
    """The reference loop's Adam step (step 10, from given moments) against the formula in float64."""
    rng = np.random.default_rng(1)
    p, m = rng.standard_normal(g.size).astype(np.float32), rng.standard_normal(g.size).astype(np.float32)
    v = np.abs(rng.standard_normal(g.size)).astype(np.float32)
    m64 = 0.9 * m.astype(np.float64) + 0.1 * g
    v64 = 0.999 * v.astype(np.float64) + 0.001 * np.square(g, dtype=np.float64)
    expected = p - (1e-3 / (1 - 0.9 ** 10)) * m64 / (np.sqrt(v64) / np.sqrt(1 - 0.999 ** 10) + 1e-8)
    reference.bind("reference_adam", p, g, m, v, g.size, 1e-3, 0.9, 0.999, 1e-8, 10)()
    agree(table, {"fused C loop": p}, expected)


def _torch_adam(n, g, **options):
    """torch.optim.Adam's step over one n-parameter tensor whose gradient is g."""
    param = torch.zeros(n, requires_grad=True)
    param.grad = torch.from_numpy(g)
    return torch.optim.Adam([param], 1e-3, **options).step


# eager mode (E1, E2): Tensors against PyTorch eager, in their own module
from eager_workloads import e1_chain_eager, e2_boston_eager  # noqa: E402,F401
