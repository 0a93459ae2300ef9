"""What the fused kernels of the C and OpenCL backends share: how each input is read, and the members run one by one.

How each input of a fused (or generated elementwise) kernel is read, given the run-time shapes (broadcasting
without copies).

Kinds: "full" (one value per output element), "scalar" (one value), "row" (a
row repeated over the leading axes: index c), "col" (a column repeated along the
trailing axes: index r), "col%n" (a block of n values in the middle axes, as a
conv bias (1, C, 1, 1) against (N, C, H, W): index r % n). The output is viewed as
(outer, inner); inputs whose broadcast fits none of these are expanded to full
arrays before the call.
"""
import functools
import math


def classify(shape, out_shape):
    """(kind, period) of one input: period is the row length or the column's inner stride."""
    size = math.prod(shape)
    if size == 1:
        return "scalar", 1
    padded = (1,) * (len(out_shape) - len(shape)) + tuple(shape)
    if padded == tuple(out_shape):
        return "full", 0
    sized = [i for i, d in enumerate(padded) if d != 1]
    lo, hi = sized[0], sized[-1] + 1
    if padded[lo:hi] != tuple(out_shape[lo:hi]) or any(d == 1 for d in out_shape[lo:hi]):
        return "other", 0
    if all(d == 1 for d in out_shape[hi:]):
        return "row", size
    kind = "col" if all(d == 1 for d in out_shape[:lo]) else f"col%{size}"
    return kind, math.prod(out_shape[hi:])


@functools.lru_cache(maxsize=1024)
def plan_layout(shapes, out_shape):
    """(kinds, outer, inner): how to read each input; "full" also for inputs to expand first (shapes: tuples)."""
    total = math.prod(out_shape)
    found = [classify(s, out_shape) for s in shapes]
    inner = next((p for k, p in found if k == "row"), None)
    if inner is None:
        inner = next((p for k, p in found if k.startswith("col")), None)
    kinds = []
    for kind, period in found:
        if kind in ("row", "other") or kind.startswith("col"):
            kind = kind if kind != "other" and period == inner else "expand"
        kinds.append(kind)
    if inner is None or inner == 0:
        return tuple(kinds), 1, total
    return tuple(kinds), total // inner, inner


def member_runner(backend, node):
    """A callable(*inputs) computing fused `node` member by member with `backend`'s kernels: what a plan without
    fusion does (the same kernels, on the device for OpenCL), so a node that runs once or twice never pays a compile."""
    kernels = [backend.kernel(m) for m in node.members]
    constants = [[backend.kernel(m.inputs[p]) if kind == "c" else None for p, (kind, _) in enumerate(args)]
                 for m, (_, args) in zip(node.members, node.program)]

    def run(*inputs):
        values = []
        for member, kernel, (_, args), sources in zip(node.members, kernels, node.program, constants):
            operands = [inputs[i] if kind == "x" else values[i] if kind == "t" else source()
                        for (kind, i), source in zip(args, sources)]
            try:
                values.append(kernel(*operands))
            except Exception as exc:  # noqa: BLE001 - name the member the user wrote
                raise node.member_error(member, operands, exc) from exc
        return values[-1]
    return run
