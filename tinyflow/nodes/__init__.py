"""Graph nodes: the base Node, the three kinds of leaf node, and Operation."""
from .leaves import Constant, Placeholder, Variable
from .node import Node, as_node
from .operation import OP_TYPES, Operation

__all__ = ["Node", "Constant", "Placeholder", "Variable", "Operation", "OP_TYPES", "as_node"]
