"""Whether eager ops record a backward graph: `tfl.no_grad()` turns it off for a while."""
import contextlib


class GradMode:
    """The recording switch, read by every eager op (a plain attribute: the cheapest check)."""

    enabled = True


def is_grad_enabled():
    """True when eager ops on Tensors that require grad record their backward graph."""
    return GradMode.enabled


class _GradSwitch(contextlib.ContextDecorator):
    """A context manager (or decorator: each call enters it anew) setting the recording switch, restoring it on exit."""

    def __init__(self, enabled):
        self.enabled = enabled
        self._previous = []

    def __enter__(self):
        self._previous.append(GradMode.enabled)
        GradMode.enabled = self.enabled
        return self

    def __exit__(self, *exc_info):
        GradMode.enabled = self._previous.pop()


def no_grad():
    """`with tfl.no_grad():` (or `@tfl.no_grad()`): eager ops inside record nothing, as in torch.no_grad."""
    return _GradSwitch(False)


def enable_grad():
    """`with tfl.enable_grad():` turns recording back on inside a no_grad block."""
    return _GradSwitch(True)
