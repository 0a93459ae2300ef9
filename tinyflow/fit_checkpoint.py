"""Resumable training: Model.fit(checkpoint_dir=...) saves everything a run needs to continue exactly.

A checkpoint is the graph's Variables (weights, optimizer slots, moving statistics) in
`variables-<epoch>.npz` plus `fit_state.json`: the last finished epoch, the seed that
fixes every epoch's data order, the states of the dropout random generators and the
history so far. The JSON file is replaced atomically after the variables are written
and names them, so a run killed at any moment leaves a consistent checkpoint.
"""
import json
import os
from pathlib import Path

import numpy as np

from .checkpoint import load_variables, save_variables
from .errors import CheckpointError

STATE_FILE = "fit_state.json"
STATE_TYPES = {"epoch": int, "seed": int, "variables": str, "random_states": dict, "history": dict,
               "history_epochs": list}


def _random_generators(graph):
    """{node name: numpy Generator} for the graph's ops that draw random numbers (dropout masks)."""
    return {node.name: node.rng for node in graph.nodes if isinstance(getattr(node, "rng", None), np.random.Generator)}


def _plain(value):
    """JSON for the numpy values in generator states (MT19937's key is an array; setting the state takes a list)."""
    if isinstance(value, (np.ndarray, np.generic)):
        return value.tolist()
    raise TypeError(f"cannot save {type(value).__name__} in a fit checkpoint")


class FitCheckpoint:
    """The checkpoint folder of one model's fit."""

    def __init__(self, folder, graph):
        self.folder, self.graph = Path(folder), graph

    def save(self, epoch, seed, history):
        """Record that `epoch` finished: variables first, then the state naming them (atomically)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        variables = f"variables-{epoch:06d}.npz"
        save_variables(self.folder / variables, self.graph)
        generators = _random_generators(self.graph)
        state = {"epoch": epoch, "seed": seed, "variables": variables,
                 "random_states": {name: rng.bit_generator.state for name, rng in generators.items()},
                 "history": history.history, "history_epochs": history.epochs}
        tmp = self.folder / f".{STATE_FILE}.tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(state, f, default=_plain)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.folder / STATE_FILE)
        for old in self.folder.glob("variables-*.npz"):
            if old.name != variables:
                old.unlink()

    def load_state(self):
        """The saved state dict (None when the folder holds no checkpoint); loads the variables too."""
        path = self.folder / STATE_FILE
        if not path.exists():
            return None
        try:
            state = json.loads(path.read_text(encoding="utf-8"))
            bad = [k for k, kind in STATE_TYPES.items() if not isinstance(state.get(k), kind)]
            if bad or os.path.basename(state["variables"]) != state["variables"]:
                raise ValueError(f"its entries {bad or ['variables']} are missing or malformed")
        except (OSError, ValueError, AttributeError, RecursionError) as err:  # AttributeError: not a JSON object
            raise CheckpointError(f"cannot read the fit checkpoint '{path}': {err}. Delete the folder "
                                  f"{self.folder} to start training from scratch.") from None
        load_variables(self.folder / state["variables"], self.graph)
        return state

    def restore_random_states(self, state):
        """Put the dropout generators back where the checkpointed run left them."""
        generators = _random_generators(self.graph)
        for name, saved in state["random_states"].items():
            if name not in generators:
                raise CheckpointError(f"the fit checkpoint in {self.folder} has a random op '{name}' this model "
                                      "lacks: build the same model before resuming")
            try:
                generators[name].bit_generator.state = saved
            except (TypeError, ValueError, KeyError) as err:
                raise CheckpointError(f"the fit checkpoint in {self.folder} holds a malformed random state for "
                                      f"'{name}' ({err}); delete the folder to start training from scratch") from None
