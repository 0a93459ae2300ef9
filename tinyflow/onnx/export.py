"""tfl.onnx.export: a traced program as an ONNX model (opset 17), with dynamic dimensions kept symbolic.

Each tinyflow op type maps to ONNX nodes through its export rule (tinyflow/onnx/rules/, next to
the import rule of the same op); an op type without one raises OnnxExportError naming it. The
program is traced in evaluation mode, and nodes whose value is fixed there (the graph's training
flag) are folded away, so dropout disappears and batch norm becomes one BatchNormalization on its
moving statistics. Control flow maps to ONNX's own: tfl.cond -> If, tfl.while_loop -> Loop, with
the branches and loop bodies as subgraphs that read outer values by name.
"""
import types

import numpy as np

from ..nodes import Constant, Node, Placeholder, Variable
from .storage_types import onnx_type
from .errors import OnnxExportError
from .rules import EXPORTS, OPSET

IR_VERSION = 8  # the IR version of opset 17: readable by every onnxruntime that runs opset 17


def _onnx():
    try:
        import onnx
    except ImportError:
        raise OnnxExportError("tfl.onnx.export needs the `onnx` package: pip install onnx "
                              "(or pip install -e '.[dev]')") from None
    return onnx


class _Exporter:
    """Walks the program from its outputs and emits ONNX nodes, initializers, inputs and outputs."""

    def __init__(self, onnx, program, parent=None, names=None):
        self.onnx, self.helper = onnx, onnx.helper
        self.program = program
        self.nodes, self.initializers = [], []
        self.names = {**(parent.names if parent is not None else {}), **(names or {})}
        self.inputs = set(program.inputs)
        self._counter = parent._counter if parent is not None else [0]

    def fresh(self, hint):
        self._counter[0] += 1
        return f"{hint}__{self._counter[0]}"

    def child(self, names):
        """An exporter for a subgraph body: it reads this one's values, with `names` ({node: ONNX name}) added."""
        return _Exporter(self.onnx, self.program, parent=self, names=names)

    def subgraph(self, label, outputs, names=None, inputs=()):
        """An ONNX graph computing `outputs` that reads this graph's values by name (If / Loop bodies)."""
        sub = _Exporter(self.onnx, self.program, parent=self, names=names)
        results = []
        for out in outputs:
            name = sub.name_of(out)
            final = sub.fresh(f"{label}_out")  # a body output must be produced inside the body
            sub.nodes.append(self.helper.make_node("Identity", [name], [final], name=final))
            results.append(self.helper.make_tensor_value_info(final, onnx_type(out.dtype), None))
        return self.helper.make_graph(sub.nodes, sub.fresh(label), list(inputs), results, sub.initializers)

    def emit(self, op_type, inputs, hint, **attrs):
        """Add one ONNX node; returns its output name."""
        out = self.fresh(hint)
        self.nodes.append(self.helper.make_node(op_type, list(inputs), [out], name=out, **attrs))
        return out

    def constant(self, array, hint):
        """An initializer holding `array`; returns its name."""
        from onnx import numpy_helper
        name = self.fresh(hint)
        self.initializers.append(numpy_helper.from_array(np.asarray(array), name=name))
        return name

    def static_value(self, node):
        """The value of a node fixed in evaluation mode (Constants, unfed defaulted Placeholders), else None."""
        if isinstance(node, Constant):
            return node.value
        if isinstance(node, Placeholder) and node not in self.inputs and node.default is not None:
            return node.default
        return None

    def name_of(self, node):
        """The ONNX value name computing `node` (emitting what it needs on first use)."""
        if node in self.names:
            return self.names[node]
        static = self.static_value(node)
        if node in self.inputs:
            name = node.name
        elif isinstance(node, Variable):
            name = self.constant(node.value, node.name)
        elif static is not None:
            name = self.constant(static, node.name)
        elif isinstance(node, Placeholder):
            raise OnnxExportError(f"Placeholder '{node.name}' is not an input of the exported program and has no "
                                  "default value; pass it as an argument of the exported function")
        else:
            mapping = EXPORTS.get(node.op_type)
            if mapping is None:
                raise OnnxExportError(
                    f"no ONNX mapping for op type '{node.op_type}' (node '{node.name}', created at "
                    f"{node.creation_site}). Ops that can be exported: {', '.join(sorted(EXPORTS))}.")
            name = mapping(self, node)
        self.names[node] = name
        return name

    def value_info(self, name, node, prefix):
        dims = [f"{prefix}_dim{i}" if d is None else d for i, d in enumerate(node.shape or ())]
        if node.shape is not None and node.shape and node.shape[0] is None:
            dims[0] = "batch"
        return self.helper.make_tensor_value_info(name, onnx_type(node.dtype), dims if node.shape is not None else None)


def export(layer_or_fn, path, input_spec=None, opset=OPSET):
    """Trace `layer_or_fn` (evaluation mode) and write an ONNX model to `path`; returns the onnx.ModelProto."""
    if opset != OPSET:
        raise OnnxExportError(f"tinyflow exports opset {OPSET} only (asked for {opset})")
    from ..jit.save_load import _program_of
    program = _program_of(layer_or_fn, input_spec, "tfl.onnx.export", OnnxExportError)
    outputs = list(program.outputs)
    if any(not hasattr(o, "op_type") for o in outputs):
        raise OnnxExportError(f"{program.fn_name} returns Python values; ONNX models return tensors only")
    names = [f"output{i}" if len(outputs) > 1 else "output" for i in range(len(outputs))]
    model = _model(program, names)
    _onnx().save(model, str(path))
    return model


def export_graph(inputs, outputs, path=None, name="tinyflow"):
    """The part of a graph from the Placeholders `inputs` to the nodes `outputs` as an ONNX model (graph mode).

    The model's inputs and outputs are named after the nodes; it is written to `path` when given.
    Returns the onnx.ModelProto.
    """
    single = isinstance(outputs, Node)
    outputs = [outputs] if single else list(outputs)
    inputs = [inputs] if isinstance(inputs, Node) else list(inputs)
    bad = [n for n in inputs if not isinstance(n, Placeholder)]
    if bad:
        raise OnnxExportError(f"the inputs of an exported graph are Placeholders; '{bad[0].name}' is a "
                              f"{bad[0].op_type}")
    names, taken = [], {p.name for p in inputs}
    for out in outputs:
        unique, n = out.name, 0
        while unique in taken:
            n += 1
            unique = f"{out.name}_{n}"
        taken.add(unique)
        names.append(unique)
    model = _model(types.SimpleNamespace(inputs=inputs, outputs=outputs, fn_name=name), names)
    if path is not None:
        _onnx().save(model, str(path))
    return model


def _model(program, output_names):
    """The checked ModelProto computing program.outputs from program.inputs, outputs named `output_names`."""
    onnx = _onnx()
    ex = _Exporter(onnx, program)
    for final, out in zip(output_names, program.outputs):
        ex.nodes.append(ex.helper.make_node("Identity", [ex.name_of(out)], [final], name=f"{final}_identity"))
    graph = ex.helper.make_graph(
        ex.nodes, program.fn_name or "tinyflow",
        [ex.value_info(p.name, p, p.name.replace("/", "_")) for p in program.inputs],
        [ex.value_info(name, node, name) for name, node in zip(output_names, program.outputs)], ex.initializers)
    model = ex.helper.make_model(graph, opset_imports=[ex.helper.make_opsetid("", OPSET)],
                                 producer_name="tinyflow")
    model.ir_version = IR_VERSION
    onnx.checker.check_model(model)
    return model
