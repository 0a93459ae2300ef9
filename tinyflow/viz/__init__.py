"""Pictures of graphs (graphviz)."""
from .graphviz_render import STYLES, VizError, dot_available, render, summarize, svg, to_graphviz

__all__ = ["to_graphviz", "render", "svg", "summarize", "dot_available", "VizError", "STYLES"]
