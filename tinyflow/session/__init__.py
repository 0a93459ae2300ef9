"""Running graphs: Session, its execution plans, feed validation."""
from .memory import MemoryProfile, memory_profile
from .plan import ExecutionPlan
from .session import GraphGrowthWarning, Session

__all__ = ["Session", "ExecutionPlan", "GraphGrowthWarning", "memory_profile", "MemoryProfile"]
