"""Before a fused node's kernel is compiled, its members run one by one with the backend's own kernels.

That is exactly what the plan would do without fusion (the same kernels, on the
device for OpenCL), so a node that runs only once or twice never pays a compile.
"""


def member_runner(backend, node):
    """A callable(*inputs) computing fused `node` member by member with `backend`'s kernels."""
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
