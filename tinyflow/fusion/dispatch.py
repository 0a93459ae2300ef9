"""The one place fused nodes meet backends: which callable runs a fused node on a backend.

After the backends become table-driven, this is what a backend registers for the
op type "FusedElementwise" (see passes/planning.py).
"""


def fused_kernel(backend, node):
    """The callable computing fused `node` on `backend`: generated C, generated OpenCL, or numpy."""
    if backend.name == "c":
        from .c_kernel import CFusedKernel
        return CFusedKernel(node, backend)
    if backend.name.startswith("opencl"):
        from .opencl_kernel import OpenCLFusedKernel
        return OpenCLFusedKernel(node, backend)
    return node.compute  # numpy: the readable reference runs the members one by one
