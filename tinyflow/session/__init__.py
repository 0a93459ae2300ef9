"""Running graphs: Session, its execution plans, feed validation."""
from .plan import ExecutionPlan
from .session import GraphGrowthWarning, Session

__all__ = ["Session", "ExecutionPlan", "GraphGrowthWarning"]
