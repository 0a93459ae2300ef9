"""Dynamic to static (Paddle's @to_static): trace functions and Layers into graphs, save and load programs."""
from ..errors import ConversionError
from .save_load import LoadedProgram, load, save
from .static_function import ConcreteProgram, InputSpec, StaticFunction, to_static

__all__ = ["to_static", "InputSpec", "StaticFunction", "ConcreteProgram", "ConversionError", "save", "load",
           "LoadedProgram"]
