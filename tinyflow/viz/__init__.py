"""Pictures of graphs (graphviz)."""
from .backprop import BackpropSteps, backprop_steps
from .memory_plot import plot_memory
from .graphviz_render import STYLES, VizError, dot_available, render, summarize, svg, to_graphviz

__all__ = ["plot_memory", "backprop_steps", "BackpropSteps", "to_graphviz", "render", "svg", "summarize", "dot_available", "VizError", "STYLES"]
