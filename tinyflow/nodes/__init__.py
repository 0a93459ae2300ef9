"""Graph nodes: the base Node, the three kinds of source node, and Operation."""
from .constant import Constant
from .node import Node, as_node
from .operation import OP_TYPES, Operation
from .placeholder import Placeholder
from .variable import Variable

__all__ = ["Node", "Constant", "Placeholder", "Variable", "Operation", "OP_TYPES", "as_node"]
