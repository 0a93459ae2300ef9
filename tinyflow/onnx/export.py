"""tfl.onnx.export: a traced program as an ONNX model (opset 17), with dynamic dimensions kept symbolic.

Each op type maps to ONNX nodes through its export rule (rules/). Traced in evaluation mode, the training flag
folds away: dropout disappears, batch norm becomes one BatchNormalization. cond and while_loop become If and Loop.
"""
import types

import numpy as np

from ..nodes import Constant, Node, Placeholder, Variable
from ..errors import OnnxExportError
from ..ops.elementwise_ops import ElementwiseOp
from .rules import EXPORTS, OPSET
from .rules.elementwise_rules import table_export
from .model_file import onnx_module
from .storage_types import onnx_type

IR_VERSION = 8  # the IR version of opset 17: readable by every onnxruntime that runs opset 17


class _Exporter:
    """Walks the program from its outputs and emits ONNX nodes and initializers; children export subgraphs."""

    def __init__(self, program, parent=None, names=None):
        self.helper, self.program = onnx_module(OnnxExportError).helper, program
        self.nodes, self.initializers = [], []
        self.names = {**(parent.names if parent is not None else {}), **(names or {})}
        self.inputs = set(program.inputs)
        self._counter = parent._counter if parent is not None else [0]

    def fresh(self, hint):
        self._counter[0] += 1
        return f"{hint}__{self._counter[0]}"

    def child(self, names, shared=False):
        """An exporter reading this one's values and `names` ({node: ONNX name}): a subgraph's, or `shared` this's."""
        sub = _Exporter(self.program, parent=self, names=names)
        if shared:
            sub.nodes, sub.initializers = self.nodes, self.initializers
        return sub

    def graph(self, label, values, dtypes, inputs=()):
        """This exporter's nodes as a subgraph returning the ONNX values `values` of `dtypes` (If / Loop bodies)."""
        finals = [self.emit("Identity", [name], f"{label}_out") for name in values]  # produced inside the body
        outputs = [self.helper.make_tensor_value_info(f, onnx_type(d), None) for f, d in zip(finals, dtypes)]
        return self.helper.make_graph(self.nodes, self.fresh(label), list(inputs), outputs, self.initializers)

    def subgraph(self, label, outputs):
        """An ONNX graph computing the nodes `outputs` that reads this graph's values by name."""
        sub = self.child({})
        return sub.graph(label, [sub.name_of(out) for out in outputs], [out.dtype for out in outputs])

    def emit(self, op_type, inputs, hint, outputs=None, **attrs):
        """Add one ONNX node (its outputs named `outputs`, else one fresh name); returns its first output's name."""
        outputs = outputs or [self.fresh(hint)]
        self.nodes.append(self.helper.make_node(op_type, list(inputs), outputs, name=outputs[0], **attrs))
        return outputs[0]

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
        return node.default if isinstance(node, Placeholder) and node not in self.inputs else None

    def name_of(self, node):
        """The ONNX value name computing `node` (emitting what it needs on first use)."""
        if node in self.names:
            return self.names[node]
        static = node.value if isinstance(node, Variable) else self.static_value(node)
        if node in self.inputs:
            name = node.name
        elif static is not None:
            name = self.constant(static, node.name)
        elif isinstance(node, Placeholder):
            raise OnnxExportError(f"Placeholder '{node.name}' is not an input of the exported program and has no "
                                  "default value; pass it as an argument of the exported function")
        elif node.op_type in EXPORTS:
            name = EXPORTS[node.op_type](self, node)
        elif isinstance(node, ElementwiseOp):  # one made with tfl.elementwise_op: the ONNX ops of its expression
            name = table_export(type(node))(self, node)
        else:
            raise OnnxExportError(
                f"no ONNX mapping for op type '{node.op_type}' (node '{node.name}', created at "
                f"{node.creation_site}). Ops that can be exported: {', '.join(sorted(EXPORTS))}.")
        self.names[node] = name
        return name

    def value_info(self, name, node, prefix):
        """The ValueInfoProto of a model input or output, its unknown dims named ('batch' first)."""
        dims = None if node.shape is None else [
            d if d is not None else "batch" if i == 0 else f"{prefix}_dim{i}" for i, d in enumerate(node.shape)]
        return self.helper.make_tensor_value_info(name, onnx_type(node.dtype), dims)


def export(layer_or_fn, path, input_spec=None):
    """Trace `layer_or_fn` (evaluation mode) and write an ONNX model to `path`; returns the onnx.ModelProto."""
    from ..jit.save_load import program_of
    program = program_of(layer_or_fn, input_spec, "tfl.onnx.export", OnnxExportError)
    outputs = list(program.outputs)
    if any(not hasattr(o, "op_type") for o in outputs):
        raise OnnxExportError(f"{program.fn_name} returns Python values; ONNX models return tensors only")
    return _model(program, [f"output{i}" if len(outputs) > 1 else "output" for i in range(len(outputs))], path)


def export_graph(inputs, outputs, path=None, name="tinyflow"):
    """The graph from the Placeholders `inputs` to the nodes `outputs` as an ONNX model (written to `path`)."""
    inputs, outputs = ([v] if isinstance(v, Node) else list(v) for v in (inputs, outputs))
    bad = [n for n in inputs if not isinstance(n, Placeholder)]
    if bad:
        raise OnnxExportError(f"the inputs of an exported graph are Placeholders; '{bad[0].name}' is a "
                              f"{bad[0].op_type}")
    names = [p.name for p in inputs]
    for out in outputs:  # each output under a name of its own
        names.append(next(unique for unique in [out.name] + [f"{out.name}_{n}" for n in range(1, len(names) + 1)]
                          if unique not in names))
    return _model(types.SimpleNamespace(inputs=inputs, outputs=outputs, fn_name=name), names[len(inputs):], path)


def _model(program, output_names, path):
    """The checked ModelProto computing program.outputs from program.inputs, written to `path` if given."""
    onnx = onnx_module(OnnxExportError)
    ex = _Exporter(program)
    for final, out in zip(output_names, program.outputs):
        ex.nodes.append(ex.helper.make_node("Identity", [ex.name_of(out)], [final], name=f"{final}_identity"))
    graph = ex.helper.make_graph(
        ex.nodes, program.fn_name or "tinyflow",
        [ex.value_info(p.name, p, p.name.replace("/", "_")) for p in program.inputs],
        [ex.value_info(name, node, name) for name, node in zip(output_names, program.outputs)], ex.initializers)
    model = ex.helper.make_model(graph, opset_imports=[ex.helper.make_opsetid("", OPSET)], producer_name="tinyflow",
                                 ir_version=IR_VERSION)
    onnx.checker.check_model(model)
    if path is not None:
        onnx.save(model, str(path))
    return model
