"""C kernels against numpy, measured side by side in one run, with the machine's triad bandwidth.

    python benchmarks/kernels.py [--threads 2] [--repeats 21]

Memory-bound kernels report the share of the STREAM-triad bandwidth they reach
(bytes they must move / time, over the triad's bytes / time, same run).
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import configure_threads, fmt_time, interleaved, load_note, print_table, summary  # noqa: E402

N = 10_000_000


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=21)
    args = parser.parse_args()
    configure_threads(args.threads)

    import numpy as np
    import tinyflow as tfl
    from tinyflow.backends import native
    from tinyflow.backends.c_backend import CBackend, gemm
    from tinyflow.ops.losses import SoftmaxCrossEntropy, SoftmaxCrossEntropyGrad
    from tinyflow.ops import activations, conv, pooling
    from tinyflow.ops.matmul import MatMul

    if not native.is_built():
        sys.exit(native.why_not_built())
    c = CBackend()
    rng = np.random.default_rng(0)
    ptr = lambda a: native.ffi.from_buffer("float[]", a)  # noqa: E731

    def op(cls, *arrays, **attrs):
        with tfl.Graph().as_default():
            return cls(*[tfl.Placeholder(a.shape, a.dtype) for a in arrays], **attrs)

    print(f"tinyflow C kernels vs numpy {np.__version__}: {args.threads} thread(s) for OpenMP and BLAS "
          f"(numpy's elementwise ufuncs are single-threaded), {args.repeats} interleaved repeats, medians")
    print(f"machine: {load_note()}; C build flags: {native.build_flags()}")

    # --- memory-bound kernels, against the triad
    x, g = rng.standard_normal(N).astype(np.float32), rng.standard_normal(N).astype(np.float32)
    a, b = np.empty(N, np.float32), rng.standard_normal(N).astype(np.float32)
    sig, relu = op(activations.Sigmoid, x), op(activations.Relu, x)
    sig_y, relu_y = sig.compute(x), relu.compute(x)
    sig_back, relu_back = op(activations.SigmoidGrad, sig_y, g), op(activations.ReluGrad, relu_y, g)
    sig_k, sig_back_k = c.kernel(sig), c.kernel(sig_back)
    relu_k, relu_back_k = c.kernel(relu), c.kernel(relu_back)

    p, m, v = (rng.standard_normal(N).astype(np.float32) for _ in range(3))
    v = np.abs(v)
    adam_p, adam_m, adam_v = p.copy(), m.copy(), v.copy()

    def numpy_adam():  # the multi-pass numpy formula (tinyflow's reference update)
        nonlocal adam_p, adam_m, adam_v
        adam_m = 0.9 * adam_m + (1 - 0.9) * g
        adam_v = 0.999 * adam_v + (1 - 0.999) * g * g
        adam_p = adam_p - (1e-3 / (1 - 0.9 ** 10)) * adam_m / (np.sqrt(adam_v) / np.sqrt(1 - 0.999 ** 10) + 1e-8)

    fused = (p.copy(), m.copy(), v.copy())
    fused_adam = lambda: native.lib.tf_adam_f32(ptr(fused[0]), ptr(g), ptr(fused[1]), ptr(fused[2]),  # noqa: E731
                                                native.ffi.NULL, N, 1e-3, 0.9, 0.999, 1e-8, 0.0, 0, 10)
    out_fwd, out_bwd = np.empty(N, np.float32), np.empty(N, np.float32)
    lib = native.lib

    def kernels_into_buffers(forward, backward, y):  # what the triad does too: write into existing memory
        forward(ptr(x), ptr(out_fwd), N)
        backward(ptr(y), ptr(g), ptr(out_bwd), N)

    t = interleaved({
        "triad": lambda: native.lib.tf_triad_f32(ptr(a), ptr(b), ptr(x), 3.0, N),
        "c sigmoid fwd+bwd": lambda: kernels_into_buffers(lib.tf_sigmoid_f32, lib.tf_sigmoid_back_f32, sig_y),
        "c sigmoid fwd+bwd (backend, new outputs)": lambda: (sig_k(x), sig_back_k(sig_y, g)),  # no plan recycles
        "numpy sigmoid fwd+bwd": lambda: (sig.compute(x), sig_back.compute(sig_y, g)),
        "c relu fwd+bwd": lambda: kernels_into_buffers(lib.tf_relu_f32, lib.tf_relu_back_f32, relu_y),
        "c relu fwd+bwd (backend, new outputs)": lambda: (relu_k(x), relu_back_k(relu_y, g)),
        "numpy relu fwd+bwd": lambda: (relu.compute(x), relu_back.compute(relu_y, g)),
        "c fused adam": fused_adam,
        "numpy adam": numpy_adam,
    }, repeats=args.repeats)
    med = {k: summary(v)[0] for k, v in t.items()}
    triad_bw = 3 * 4 * N / med["triad"]
    rows = [["STREAM triad a = b + s·c", fmt_time(med["triad"]), "", "", f"{triad_bw / 1e9:.1f} GB/s", "100%"]]
    for name, bytes_moved in (("sigmoid fwd+bwd", 20 * N), ("relu fwd+bwd", 20 * N), ("adam", 28 * N)):
        key_c = f"c {name}" if name != "adam" else "c fused adam"
        key_np = f"numpy {name}"
        bw = bytes_moved / med[key_c]
        rows.append([f"{name} (10M float32)", fmt_time(med[key_c]), fmt_time(med[key_np]),
                     f"{med[key_np] / med[key_c]:.2f}x", f"{bw / 1e9:.1f} GB/s", f"{bw / triad_bw:.0%}"])
    print_table("Memory-bound kernels (bytes each must move: sigmoid/relu fwd 8 B + bwd 12 B per element, "
                "adam 28 B per element)", ["kernel", "C", "numpy", "speed-up", "C bandwidth", "share of triad"], rows)
    adam_bound = 28 * N / triad_bw
    for name in ("sigmoid", "relu"):
        allocating = med[f"c {name} fwd+bwd (backend, new outputs)"]
        print(f"{name} called outside a Session, allocating fresh outputs: {fmt_time(allocating)} "
              f"({20 * N / allocating / triad_bw:.0%} of triad: page faults on new memory, which a Session's "
              "plan avoids by recycling buffers)")
    print(f"fused adam: {med['c fused adam'] / adam_bound:.2f}x the triad-bound time for its bytes "
          f"({fmt_time(adam_bound)}); {med['numpy adam'] / med['c fused adam']:.2f}x faster than numpy's passes")

    # --- compute kernels
    logits = rng.standard_normal((256, 1000)).astype(np.float32)
    labels = rng.integers(0, 1000, 256)
    one = np.asarray(1.0, np.float32)
    xent, xent_back = op(SoftmaxCrossEntropy, logits, labels), op(SoftmaxCrossEntropyGrad, logits, labels, one)
    xent_k, xent_back_k = c.kernel(xent), c.kernel(xent_back)

    def numpy_xent_chain():  # what a student writes with numpy: log-softmax, pick, mean; softmax - onehot
        shifted = logits - logits.max(1, keepdims=True)
        log_probs = shifted - np.log(np.exp(shifted).sum(1, keepdims=True))
        loss = -log_probs[np.arange(256), labels].mean()
        grad = np.exp(log_probs)
        grad[np.arange(256), labels] -= 1
        return loss, grad / 256

    A, B = rng.standard_normal((512, 784)).astype(np.float32), rng.standard_normal((784, 1024)).astype(np.float32)
    mm = op(MatMul, A, B)
    mm_k = c.kernel(mm)
    images = rng.standard_normal((64, 8, 16, 16)).astype(np.float32)
    filters = rng.standard_normal((16, 8, 3, 3)).astype(np.float32)
    conv_op = op(conv.Conv, images, filters, padding=1)
    conv_k = c.kernel(conv_op)
    pool_op = op(pooling.MaxPool, images, kernel_size=2)
    pool_k = c.kernel(pool_op)
    t = interleaved({
        "c xent": lambda: (xent_k(logits, labels), xent_back_k(logits, labels, one)),
        "numpy xent": numpy_xent_chain,
        "c matmul": lambda: mm_k(A, B), "numpy matmul": lambda: A @ B, "c gemm": lambda: gemm(A, B),
        "c conv2d": lambda: conv_k(images, filters), "numpy conv2d": lambda: conv_op.compute(images, filters),
        "c maxpool": lambda: pool_k(images), "numpy maxpool": lambda: pool_op.compute(images),
    }, repeats=args.repeats)
    med = {k: summary(v)[0] for k, v in t.items()}
    spread = {k: summary(v)[1] for k, v in t.items()}
    rows = []
    for label, key in (("softmax cross-entropy fwd+bwd (256 x 1000)", "xent"),
                       ("matmul 512x784 @ 784x1024 (C backend = BLAS)", "matmul"),
                       ("conv2d 64x8x16x16, 16 filters 3x3 pad 1", "conv2d"), ("max-pool 2x2 on 64x8x16x16", "maxpool")):
        rows.append([label, f"{fmt_time(med['c ' + key])} ±{fmt_time(spread['c ' + key])}",
                     fmt_time(med["numpy " + key]), f"{med['numpy ' + key] / med['c ' + key]:.2f}x"])
    print_table("Compute kernels", ["kernel", "C (median ± IQR)", "numpy", "speed-up"], rows)
    print(f"hand-written GEMM (ckernels/src/gemm.c) 512x784x1024: {fmt_time(med['c gemm'])}, "
          f"{med['numpy matmul'] / med['c gemm']:.0%} of BLAS's speed; C backend matmul / numpy: "
          f"{med['c matmul'] / med['numpy matmul']:.3f}")
    opencl_rows(args, np, tfl, op, rng)


def opencl_rows(args, np, tfl, op, rng):
    """The same kernels on the OpenCL backend, inputs already on the device (as within a run)."""
    from tinyflow.backends import OpenCLBackend
    from tinyflow.ops.losses import SoftmaxCrossEntropy, SoftmaxCrossEntropyGrad
    from tinyflow.ops import activations
    from tinyflow.ops.matmul import MatMul
    if not OpenCLBackend.is_available():
        print(f"\nOpenCL rows: not available ({OpenCLBackend.why_unavailable()})")
        return
    cl = OpenCLBackend()
    queue = cl.runtime.queue
    n = 1_000_000
    x = rng.standard_normal(n).astype(np.float32)
    g = rng.standard_normal(n).astype(np.float32)
    sig = op(activations.Sigmoid, x)
    sig_y = sig.compute(x)
    sig_back = op(activations.SigmoidGrad, sig_y, g)
    dx, dg, dy = cl.device(x), cl.device(g), cl.device(sig_y)
    logits = rng.standard_normal((256, 1000)).astype(np.float32)
    labels = rng.integers(0, 1000, 256)
    xent = op(SoftmaxCrossEntropy, logits, labels)
    xent_back = op(SoftmaxCrossEntropyGrad, logits, labels, np.asarray(1.0, np.float32))
    dlogits, one = cl.device(logits), np.asarray(1.0, np.float32)
    A, B = rng.standard_normal((256, 784)).astype(np.float32), rng.standard_normal((784, 256)).astype(np.float32)
    dA, dB = cl.device(A), cl.device(B)
    mm = op(MatMul, A, B)

    def on_device(fn):
        def timed():
            fn()
            queue.finish()  # kernels run asynchronously: wait for them
        return timed
    t = interleaved({
        "opencl sigmoid": on_device(lambda: (cl.kernel(sig)(dx), cl.kernel(sig_back)(dy, dg))),
        "numpy sigmoid": lambda: (sig.compute(x), sig_back.compute(sig_y, g)),
        "opencl xent": on_device(lambda: (cl.kernel(xent)(dlogits, labels), cl.kernel(xent_back)(dlogits, labels, one))),
        "numpy xent": lambda: (xent.compute(logits, labels), xent_back.compute(logits, labels, one)),
        "opencl matmul": on_device(lambda: cl.kernel(mm)(dA, dB)),
        "numpy matmul": lambda: A @ B,
    }, repeats=max(args.repeats // 2, 5))
    med = {k: summary(v)[0] for k, v in t.items()}
    rows = [[label, fmt_time(med["opencl " + key]), fmt_time(med["numpy " + key]),
             f"{med['numpy ' + key] / med['opencl ' + key]:.2f}x"]
            for label, key in (("sigmoid fwd+bwd (1M float32)", "sigmoid"),
                               ("softmax cross-entropy fwd+bwd (256 x 1000)", "xent"),
                               ("matmul 256x784 @ 784x256 (tiled, local memory)", "matmul"))]
    print_table(f"OpenCL kernels on {cl.runtime.describe()} (data on the device)",
                ["kernel", "OpenCL", "numpy", "speed-up"], rows)


if __name__ == "__main__":
    main()
