"""Pictures of graphs (graphviz) and the interactive explorer page (tfl.viz.explore)."""
from ..graph import PICTURES
from ..plot import plot_memory
from .backprop_steps import BackpropSteps, backprop_steps, backward_graph, eager_backprop_steps
from .explorer import ExplorerError, ExplorerPage, explore
from .graphviz_render import STYLES, VizError, dot_available, render, summarize, svg, to_graphviz

PICTURES["svg"] = svg  # Jupyter shows graphs, nodes and traced programs as their pictures

__all__ = ["explore", "ExplorerPage", "ExplorerError", "backward_graph", "eager_backprop_steps", "plot_memory",
           "backprop_steps", "BackpropSteps", "to_graphviz", "render", "svg", "summarize", "dot_available", "VizError",
           "STYLES"]
