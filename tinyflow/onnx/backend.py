"""tinyflow as an ONNX backend (onnx.backend.base.Backend), which ONNX's conformance cases run on:
`TinyflowBackend.prepare(model, backend="c").run([x, y])`. Inputs needed when the graph is built (shapes, axes,
pads) are fixed to the values fed: the model is imported once per distinct value."""
import numpy as np
from onnx.backend.base import Backend, BackendRep

from .importer import load_fixing


class TinyflowRep(BackendRep):
    """A prepared model: imported on the first run (again for other values of inputs it must fix)."""

    def __init__(self, model, backend=None):
        self.model, self.backend = model, backend
        initializers = {t.name for t in model.graph.initializer}
        self.input_names = [v.name for v in model.graph.input if v.name not in initializers]
        self.output_names = [v.name for v in model.graph.output]
        self._fixed, self._programs = [], {}  # the graph inputs the import needs fixed; their values -> program

    def program(self, feeds):
        """The program imported for these feeds (one per the values of the inputs it must fix)."""
        program = self._programs.get(self._key(feeds))
        if program is None:
            program = load_fixing(self.model, feeds, self._fixed)  # it may fix more inputs: keyed after it
            self._programs[self._key(feeds)] = program
        return program

    def _key(self, feeds):
        values = [(name, np.asarray(feeds[name])) for name in self._fixed]
        return tuple((name, v.dtype.str, v.shape, v.tobytes()) for name, v in values)

    def run(self, inputs, **kwargs):
        """Outputs (a tuple, in the model's order) for inputs given as a list (model order) or a dict."""
        feeds = dict(inputs) if isinstance(inputs, dict) else dict(zip(self.input_names, inputs))
        program = self.program(feeds)
        values = program({k: v for k, v in feeds.items() if k in program.inputs}, backend=self.backend)
        return tuple(values[name] for name in self.output_names)


class TinyflowBackend(Backend):
    """The ONNX backend interface over tinyflow; `backend=` picks tinyflow's own backend (numpy, c, opencl)."""

    @classmethod
    def prepare(cls, model, device="CPU", backend=None, **kwargs):
        if not cls.supports_device(device):
            raise ValueError(f"tinyflow's ONNX backend runs on the CPU device, not {device!r}")
        return TinyflowRep(model, backend=backend)

    @classmethod
    def run_node(cls, node, inputs, device="CPU", outputs_info=None, backend=None, **kwargs):
        """Run one NodeProto on a list of numpy inputs (a one-node model is made around it)."""
        from onnx import helper
        values = [np.asarray(v) for v in inputs]
        graph = helper.make_graph(
            [node], "run_node",
            [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape)
             for n, v in zip([name for name in node.input if name], values)],
            [helper.make_empty_tensor_value_info(n) for n in node.output if n])
        opset = kwargs.get("opset_version")
        model = helper.make_model(graph, **({"opset_imports": [helper.make_opsetid("", opset)]} if opset else {}))
        return cls.prepare(model, device, backend=backend).run(values)

    @classmethod
    def supports_device(cls, device):
        return device.upper() == "CPU"
