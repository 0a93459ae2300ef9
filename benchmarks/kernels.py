"""C kernels against the best hand-written loop, numpy, and the machine's triad, side by side in one run.

    python benchmarks/kernels.py [--threads 2] [--repeats 21] [--quick]   (the same as run.py --only K)

K1, memory-bound kernels: each tinyflow C kernel against the same computation as a hand-written
loop (reference_loops.c, -O3 -march=native -ffast-math -fopenmp) and numpy, with the bandwidth
each implies for the bytes it must move, as a share of the STREAM triad timed alongside.
K2, compute kernels: against numpy (and the hand-written GEMM against BLAS).
K3, OpenCL kernels (unless --skip-opencl), data already on the device.
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import interleaved, summary  # noqa: E402

LOOP, TINYFLOW, NEW_OUTPUTS, NUMPY = "C loop", "tinyflow c", "tinyflow c, new outputs", "numpy"
# bytes each kernel pair must move per element: forward reads x, writes y (8); backward reads y
# and g, writes the gradient (12); Adam reads g and reads and writes p, m, v (28)
BYTES = {"sigmoid fwd+bwd": 20, "relu fwd+bwd": 20, "adam": 28}


def _op(tfl, cls, *arrays, **attrs):
    with tfl.Graph().as_default():
        return cls(*[tfl.Placeholder(a.shape, a.dtype) for a in arrays], **attrs)


def memory_bound(ctx):
    """K1: {name: callable} for each kernel as C loop, tinyflow C kernel (into buffers and allocating), numpy."""
    from tinyflow.backends import native
    from tinyflow.backends.c_backend import CBackend, flat_kernel
    from tinyflow.ops import elementwise_ops as activations
    from workloads import agree, check_adam
    tfl, ref, n = ctx.tfl, ctx.reference, ctx.n
    rng = np.random.default_rng(0)
    c = CBackend()
    ptr = lambda a: native.ffi.from_buffer("float[]", a)  # noqa: E731
    x, g = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    out_fwd, out_bwd = np.empty(n, np.float32), np.empty(n, np.float32)
    lib = native.lib
    candidates = {}
    for name, fwd_cls, bwd_cls, fwd_c, bwd_c in (
            ("sigmoid", activations.Sigmoid, activations.SigmoidGrad, flat_kernel("Sigmoid"), flat_kernel("SigmoidGrad")),
            ("relu", activations.Relu, activations.ReluGrad, flat_kernel("Relu"), flat_kernel("ReluGrad"))):
        fwd = _op(tfl, fwd_cls, x)
        y = fwd.compute(x)
        bwd = _op(tfl, bwd_cls, y, g)
        fwd_k, bwd_k = c.kernel(fwd), c.kernel(bwd)
        loop_fwd = ref.bind(f"reference_{name}", x, out_fwd, n)
        loop_bwd = ref.bind(f"reference_{name}_back", y, g, out_bwd, n)
        px, py, pg, pf, pb = ptr(x), ptr(y), ptr(g), ptr(out_fwd), ptr(out_bwd)
        group = f"{name} fwd+bwd"
        candidates[f"{group}: {LOOP}"] = lambda f=loop_fwd, b=loop_bwd: (f(), b())
        candidates[f"{group}: {TINYFLOW}"] = (lambda f=fwd_c, b=bwd_c, px=px, py=py, pg=pg, pf=pf, pb=pb:
                                              (f(px, pf, n), b(py, pg, pb, n)))
        # the backend's kernels as a Session calls them outside a plan: a fresh output every call
        candidates[f"{group}: {NEW_OUTPUTS}"] = lambda f=fwd_k, b=bwd_k, y=y: (f(x), b(y, g))
        candidates[f"{group}: {NUMPY}"] = lambda f=fwd, b=bwd, y=y: (f.compute(x), b.compute(y, g))
        expected_bwd = bwd.compute(y, g)
        for kind in (LOOP, TINYFLOW):  # each fills out_fwd and out_bwd; they must compute what numpy does
            candidates[f"{group}: {kind}"]()
            agree(f"K1 {group}, forward", {kind: out_fwd}, y)
            agree(f"K1 {group}, backward", {kind: out_bwd}, expected_bwd)

    p, m = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    v = np.abs(rng.standard_normal(n).astype(np.float32))
    loop_state, c_state = (p.copy(), m.copy(), v.copy()), (p.copy(), m.copy(), v.copy())
    numpy_state = {"p": p.copy(), "m": m.copy(), "v": v.copy()}

    def numpy_adam():  # the multi-pass numpy formula (tinyflow's reference update)
        s = numpy_state
        s["m"] = 0.9 * s["m"] + (1 - 0.9) * g
        s["v"] = 0.999 * s["v"] + (1 - 0.999) * g * g
        s["p"] = s["p"] - (1e-3 / (1 - 0.9 ** 10)) * s["m"] / (np.sqrt(s["v"]) / np.sqrt(1 - 0.999 ** 10) + 1e-8)
    check_adam("K1", ref, g[:1000])
    cp, cg, cm, cv = ptr(c_state[0]), ptr(g), ptr(c_state[1]), ptr(c_state[2])
    candidates[f"adam: {LOOP}"] = ref.bind("reference_adam", loop_state[0], g, loop_state[1], loop_state[2], n,
                                           1e-3, 0.9, 0.999, 1e-8, 10)
    candidates[f"adam: {TINYFLOW}"] = lambda: lib.tf_adam_f32(cp, cg, cm, cv, native.ffi.NULL, n, 1e-3, 0.9, 0.999,
                                                               1e-8, 0.0, 0, 10)
    candidates[f"adam: {NUMPY}"] = numpy_adam
    return candidates


def compute_bound(ctx):
    """K2: {name: callable} for the compute kernels, tinyflow C against numpy."""
    from tinyflow.backends import native
    from tinyflow.backends.c_backend import CBackend
    from tinyflow.ops import conv, pooling
    from tinyflow.ops.attention import ScaledDotProductAttention
    from tinyflow.ops.cross_entropy import SoftmaxCrossEntropy, SoftmaxCrossEntropyGrad
    from tinyflow.ops.matmul import MatMul
    tfl = ctx.tfl
    rng = np.random.default_rng(1)
    c = CBackend()
    logits = rng.standard_normal((256, 1000)).astype(np.float32)
    labels = rng.integers(0, 1000, 256)
    one = np.asarray(1.0, np.float32)
    xent_k = c.kernel(_op(tfl, SoftmaxCrossEntropy, logits, labels))
    xent_back_k = c.kernel(_op(tfl, SoftmaxCrossEntropyGrad, logits, labels, one))

    def numpy_xent():  # what a student writes with numpy: log-softmax, pick, mean; softmax - onehot
        shifted = logits - logits.max(1, keepdims=True)
        log_probs = shifted - np.log(np.exp(shifted).sum(1, keepdims=True))
        loss = -log_probs[np.arange(256), labels].mean()
        grad = np.exp(log_probs)
        grad[np.arange(256), labels] -= 1
        return loss, grad / 256

    A, B = rng.standard_normal((512, 784)).astype(np.float32), rng.standard_normal((784, 1024)).astype(np.float32)
    mm_k = c.kernel(_op(tfl, MatMul, A, B))
    images = rng.standard_normal((64, 8, 16, 16)).astype(np.float32)
    filters = rng.standard_normal((16, 8, 3, 3)).astype(np.float32)
    conv_op = _op(tfl, conv.Conv, images, filters, padding=1)
    conv_k = c.kernel(conv_op)
    pool_op = _op(tfl, pooling.MaxPool, images, kernel_size=2)
    pool_k = c.kernel(pool_op)
    q, k, v = (rng.standard_normal((1, 4, 128, 64)).astype(np.float32) for _ in range(3))  # a transformer's, batch 1
    attention_op = _op(tfl, ScaledDotProductAttention, q, k, v)
    attention_k = c.kernel(attention_op)
    def hand_written():  # the tiles by the hand-written kernel instead of BLAS
        native.choose_gemm("tinyflow")
        try:
            return mm_k(A, B)
        finally:
            native.choose_gemm()

    xent, matmul = "softmax cross-entropy fwd+bwd 256x1000", "matmul 512x784 @ 784x1024"
    conv_name, pool = "conv2d 64x8x16x16, 16 filters 3x3 pad 1", "max-pool 2x2 on 64x8x16x16"
    attention = "attention, 4 heads of 128 queries and keys of 64"
    return {
        f"{xent}: {TINYFLOW}": lambda: (xent_k(logits, labels), xent_back_k(logits, labels, one)),
        f"{xent}: {NUMPY}": numpy_xent,
        f"{matmul}: {TINYFLOW} (numpy's BLAS, tiles on tinyflow's pool)": lambda: mm_k(A, B),
        f"{matmul}: tinyflow gemm.c (hand-written)": lambda: hand_written(),
        f"{matmul}: {NUMPY}": lambda: A @ B,
        f"{conv_name}: {TINYFLOW}": lambda: conv_k(images, filters),
        f"{conv_name}: {NUMPY}": lambda: conv_op.compute(images, filters),
        f"{pool}: {TINYFLOW}": lambda: pool_k(images),
        f"{pool}: {NUMPY}": lambda: pool_op.compute(images),
        f"{attention}: {TINYFLOW}": lambda: attention_k(q, k, v),
        f"{attention}: {NUMPY}": lambda: attention_op.compute(q, k, v),
    }


def opencl(ctx):
    """K3: ({name: callable} for OpenCL kernels with their inputs on the device, the device), or None without OpenCL."""
    from tinyflow.backends import OpenCLBackend
    from tinyflow.ops import elementwise_ops as activations
    from tinyflow.ops.cross_entropy import SoftmaxCrossEntropy, SoftmaxCrossEntropyGrad
    from tinyflow.ops.matmul import MatMul
    if os.environ.get("TINYFLOW_BENCH_SKIP_OPENCL") == "1" or not OpenCLBackend.is_available():
        return None
    tfl = ctx.tfl
    rng = np.random.default_rng(2)
    cl = OpenCLBackend()
    queue = cl.runtime.queue
    x = rng.standard_normal(1_000_000).astype(np.float32)
    g = rng.standard_normal(1_000_000).astype(np.float32)
    sig = _op(tfl, activations.Sigmoid, x)
    sig_y = sig.compute(x)
    sig_back = _op(tfl, activations.SigmoidGrad, sig_y, g)
    dx, dg, dy = cl.device(x), cl.device(g), cl.device(sig_y)
    logits = rng.standard_normal((256, 1000)).astype(np.float32)
    labels = rng.integers(0, 1000, 256)
    one = np.asarray(1.0, np.float32)
    xent = _op(tfl, SoftmaxCrossEntropy, logits, labels)
    xent_back = _op(tfl, SoftmaxCrossEntropyGrad, logits, labels, one)
    dlogits = cl.device(logits)
    A, B = rng.standard_normal((256, 784)).astype(np.float32), rng.standard_normal((784, 256)).astype(np.float32)
    dA, dB = cl.device(A), cl.device(B)
    mm = _op(tfl, MatMul, A, B)

    def on_device(fn):
        def timed():
            fn()
            queue.finish()  # kernels run asynchronously: wait for them
        return timed
    sigmoid, xent_name, matmul = ("sigmoid fwd+bwd (1M float32)", "softmax cross-entropy fwd+bwd 256x1000",
                                  "matmul 256x784 @ 784x256 (tiled, local memory)")
    return {
        f"{sigmoid}: tinyflow opencl": on_device(lambda: (cl.kernel(sig)(dx), cl.kernel(sig_back)(dy, dg))),
        f"{sigmoid}: {NUMPY}": lambda: (sig.compute(x), sig_back.compute(sig_y, g)),
        f"{xent_name}: tinyflow opencl": on_device(lambda: (cl.kernel(xent)(dlogits, labels),
                                                            cl.kernel(xent_back)(dlogits, labels, one))),
        f"{xent_name}: {NUMPY}": lambda: (xent.compute(logits, labels), xent_back.compute(logits, labels, one)),
        f"{matmul}: tinyflow opencl": on_device(lambda: cl.kernel(mm)(dA, dB)),
        f"{matmul}: {NUMPY}": lambda: A @ B,
    }, cl.runtime.describe()


def measure(ctx):
    """The kernel tables K1 (memory-bound, with the triad), K2 (compute) and K3 (OpenCL) as sections."""
    from tables import TRIAD_BYTES, rows_of, triad_candidates
    from tinyflow.backends import native
    if not native.is_built():
        raise RuntimeError(native.why_not_built())
    group = lambda name: name.split(": ")[0]  # noqa: E731
    candidates = memory_bound(ctx)
    triad = triad_candidates(ctx.reference, ctx.n)
    triad_name = next(iter(triad))
    stats = {name: summary(t) for name, t in
             interleaved({**triad, **candidates}, ctx.repeats, ctx.warmup, ctx.settle).items()}
    sections = [{
        "key": "K1", "title": f"memory-bound C kernels over {ctx.n / 1e6:g}M float32",
        "note": ("ratio to the hand-written C loop of the same kernel; GB/s for the bytes each must move (sigmoid and "
                 "relu fwd 8 + bwd 12 per element, adam 28), and its share of the triad's (12 bytes per element)"),
        "focus": [f"{name}: {TINYFLOW}" for name in BYTES], "bandwidth": True,
        "rows": rows_of(stats, lambda name: triad_name if name.startswith("STREAM") else f"{group(name)}: {LOOP}",
                        lambda name: (TRIAD_BYTES if name.startswith("STREAM") else BYTES[group(name)]) * ctx.n,
                        (triad_name, ctx.n))}]
    candidates = compute_bound(ctx)
    stats = {name: summary(t) for name, t in interleaved(candidates, ctx.repeats, ctx.warmup, ctx.settle).items()}
    sections.append({"key": "K2", "title": "compute kernels", "note": "ratio to numpy doing the same",
                     "focus": [n for n in candidates if n.endswith(TINYFLOW)], "bandwidth": False,
                     "rows": rows_of(stats, lambda name: f"{group(name)}: {NUMPY}")})
    found = opencl(ctx)
    if found is not None:
        candidates, device = found
        stats = {name: summary(t) for name, t in
                 interleaved(candidates, max(ctx.repeats // 2, 3), ctx.warmup, ctx.settle).items()}
        sections.append({"key": "K3", "title": f"OpenCL kernels on {device} (data on the device)",
                         "note": "ratio to numpy doing the same", "focus": [], "bandwidth": False,
                         "rows": rows_of(stats, lambda name: f"{group(name)}: {NUMPY}")})
    return sections


if __name__ == "__main__":
    import run
    sys.exit(run.main(["--only", "K", *sys.argv[1:]]))
