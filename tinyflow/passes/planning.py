"""The Session's hook: an ExecutionPlan of the optimised graph instead of the user's graph."""
from ..fusion import FusedElementwise, fused_kernel
from ..session.plan import ExecutionPlan
from .pipeline import optimize


def build_plan(fetches, fed, backend, options):
    """The ExecutionPlan for `fetches`: of the optimised copy when `options` (see resolve_options) say so.

    The plan's `optimized` is the OptGraph it runs (None when not optimised) and
    `report` what each pass did. Fused nodes get their backend's generated kernel;
    once backends take kernels at run time this becomes
    `backend.register_kernel("FusedElementwise", lambda op, *v: ...)` (see fusion/dispatch.py).
    """
    if not options:
        plan = ExecutionPlan(fetches, fed, backend)
        plan.optimized = plan.report = None
        return plan
    graph = optimize(fetches, fed, options)
    plan = ExecutionPlan(graph.fetches, fed, backend)
    for step in plan.steps:
        if isinstance(step.node, FusedElementwise):
            step.kernel = fused_kernel(backend, step.node)
    plan.optimized, plan.report = graph, graph.report
    return plan
