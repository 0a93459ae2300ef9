"""The Session's hook: an ExecutionPlan of the optimised graph instead of the user's graph."""
from ..session.plan import ExecutionPlan
from .pipeline import optimize


def build_plan(fetches, fed, backend, options):
    """The ExecutionPlan for `fetches`: of the optimised copy when `options` (see resolve_options) say so.

    The plan's `optimized` is the OptGraph it runs (None when not optimised) and
    `report` what each pass did. Fused nodes bind their backend's generated kernel themselves
    (`FusedElementwise.bind_kernel`, asked by `Backend.kernel`): each keeps per-node state.
    """
    if not options:
        plan = ExecutionPlan(fetches, fed, backend)
        plan.optimized = plan.report = None
        return plan
    graph = optimize(fetches, fed, options)
    plan = ExecutionPlan(graph.fetches, fed, backend)
    plan.optimized, plan.report = graph, graph.report
    return plan
