"""The error of dynamic-to-static conversion."""
from ..errors import TinyflowError


class ConversionError(TinyflowError):
    """Code inside to_static that cannot become a graph; the message names the file, line and the fix."""
