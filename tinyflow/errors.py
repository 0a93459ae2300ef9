"""The exceptions tinyflow raises: one base class, one subclass per kind of mistake. Every message names the node,
its op type, the shapes involved and where the node was created, and ends with how to fix the problem."""


class TinyflowError(Exception):
    """Base class of every error tinyflow raises on purpose."""


class ShapeError(TinyflowError, ValueError):
    """Operand shapes that cannot work together, found while building the graph."""


class ArgumentError(ShapeError, TypeError):
    """A bad non-tensor argument of an op (an axis, a window size, a dtype...), found when the op is built."""


class FeedError(TinyflowError, ValueError):
    """A missing or unusable value in `feed_dict`."""


class GradientError(TinyflowError):
    """Backpropagation cannot go on: a missing or malformed gradient function."""


class BackendError(TinyflowError):
    """An unknown backend, or one this machine cannot run."""


class GraphError(TinyflowError):
    """Misuse of a graph: unknown names, a finalized graph, mixing graphs."""


class ExecutionError(TinyflowError):
    """A kernel failed while `Session.run` was computing a node."""


class CheckpointError(TinyflowError):
    """A checkpoint that does not match the graph's variables."""


class GradientCheckError(TinyflowError, AssertionError):
    """Analytic and finite-difference gradients disagree (raised by `testing.gradcheck`)."""


def describe(node):
    """One phrase naming a node for error messages: its name, op type and creation site."""
    site = getattr(node, "creation_site", None)
    where = f" (created at {site})" if site else ""
    name = getattr(node, "name", None)  # an eager op has none
    return f"{node.op_type} node '{name}'{where}" if name else f"{node.op_type}{where}"


class OnnxExportError(TinyflowError):
    """A program that cannot become ONNX (an op type without a mapping, or an attribute ONNX lacks)."""


class OnnxImportError(TinyflowError):
    """An ONNX model tinyflow cannot import; `unsupported`: valid ONNX that tinyflow does not handle yet."""

    def __init__(self, message, unsupported=False):
        super().__init__(message)
        self.unsupported = unsupported


class ConversionError(TinyflowError):
    """Code inside to_static that cannot become a graph; the message names the file, line and the fix."""
