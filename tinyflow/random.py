"""One seed for everything random in tinyflow (dropout masks, initializers, shuffling)."""
import numpy as np

_state = {"seed": None, "counter": 0}


def set_seed(seed):
    """Make every random op and initializer created from now on reproducible."""
    _state["seed"] = None if seed is None else int(seed)
    _state["counter"] = 0


def next_seed():
    """A fresh seed for one random op: derived from the global seed, or from the OS when none is set."""
    if _state["seed"] is None:
        return int(np.random.SeedSequence().generate_state(1)[0])
    _state["counter"] += 1
    return int(np.random.SeedSequence([_state["seed"], _state["counter"]]).generate_state(1)[0])


def generator(seed=None):
    """A numpy Generator seeded by `seed`, or by the next global seed."""
    return np.random.default_rng(next_seed() if seed is None else seed)
