"""Graph nodes: the base Node, the three kinds of leaf node, and Operation."""
from .node import Constant, Node, Placeholder, Variable, as_node, is_eager
from .operation import OP_TYPES, Operation

__all__ = ["Node", "Constant", "Placeholder", "Variable", "Operation", "OP_TYPES", "as_node", "is_eager"]
