"""Running graphs: Session, its execution plans, feed validation."""
from .memory import MemoryProfile, memory_profile
from .plan import ExecutionPlan
from .session import GraphGrowthWarning, Session, check_feed
from ..nodes import Placeholder

# a Placeholder's default value obeys the rules of feeds
Placeholder.check_default = staticmethod(lambda node, value: check_feed(node, value, needed_by=None))

__all__ = ["Session", "ExecutionPlan", "GraphGrowthWarning", "memory_profile", "MemoryProfile"]
