"""Whether eager ops record a backward graph: `tfl.no_grad()` turns it off for a while."""
import contextlib


class GradMode:
    """The recording switch, read by every eager op (a plain attribute: the cheapest check)."""

    enabled = True


def is_grad_enabled():
    """True when eager ops on Tensors that require grad record their backward graph."""
    return GradMode.enabled


@contextlib.contextmanager
def switched(enabled):
    """Set the recording switch for a block, restoring it on exit (as a decorator, each call enters it anew)."""
    previous, GradMode.enabled = GradMode.enabled, enabled
    try:
        yield
    finally:
        GradMode.enabled = previous


def no_grad():
    """`with tfl.no_grad():` (or `@tfl.no_grad()`): eager ops inside record nothing, as in torch.no_grad."""
    return switched(False)


def enable_grad():
    """`with tfl.enable_grad():` turns recording back on inside a no_grad block."""
    return switched(True)
