"""jit.save / jit.load: a traced program as JSON (ops, attributes, edges, input specs) plus parameters in .npz.

    tfl.jit.save(model, "out/model", input_spec=[InputSpec([None, 13])])   # out/model.json + out/model.npz
    m = tfl.jit.load("out/model"); m(x)    # no model code needed: ops come from tinyflow's op registry

Loading never runs code from the files: the JSON names registered op types and plain
attribute values, the .npz holds numeric arrays read with allow_pickle=False, and
anything unexpected (unknown op types, bad JSON, wrong shapes, missing parameters,
paths, oversized files) is a CheckpointError.
"""
import json
import os
import zipfile
import zlib

import numpy as np

from ..errors import CheckpointError, TinyflowError
from ..graph import Graph, ancestors
from ..nodes import Constant, Node, Operation, Placeholder, Variable
from ..shapes import shapes_compatible
from .input_spec import InputSpec
from .ops_io import build_op, decode, encode, op_attributes

FORMAT = "tinyflow.jit"
VERSION = 2  # 2: a cond or loop is one op with several outputs, read by Output nodes
MAX_JSON_BYTES = 64 << 20   # a description bigger than this is not a model we wrote


def _paths(path):
    path = os.fspath(path)
    root = path[:-5] if path.endswith(".json") else path
    return root + ".json", root + ".npz"


def _program_of(layer_or_fn, input_spec, caller="tfl.jit.save", error=TinyflowError):
    from .static_function import StaticFunction
    function = layer_or_fn if isinstance(layer_or_fn, StaticFunction) else StaticFunction(layer_or_fn, input_spec)
    specs = input_spec if input_spec is not None else function.input_spec
    if specs is None and not function.concrete_programs:
        raise error(f"{caller} traces the program on inputs of known shapes and dtypes: pass input_spec="
                    "[tfl.jit.InputSpec([None, 13], 'float32')] (one InputSpec per input, None for the batch "
                    "dimension), or call the tfl.jit.to_static function once before")
    if specs is not None:
        training, function.training = function.training, False
        try:
            return function.get_concrete_program(*specs)
        finally:
            function.training = training
    return function.concrete_programs[-1]


def _nodes_of(outputs):
    """Every node the outputs need, control-flow subgraphs included, in creation order."""
    found = ancestors(outputs)
    pending = [n for n in found if hasattr(n, "subgraphs")]
    while pending:
        inner = ancestors([m for n in pending for sub in n.subgraphs for m in _saved_part(sub)]) - found
        found |= inner
        pending = [n for n in inner if hasattr(n, "subgraphs")]
    return sorted(found, key=lambda n: n.creation_index)


def _saved_part(sub):
    """A subgraph's nodes as saved: the stacks a loop records for its gradient are rebuilt by gradients()."""
    if sub.restores:
        raise TinyflowError(f"cannot save '{sub.label}', the body of a while_loop's gradient loop: save the forward "
                            "function, and build gradients after tfl.jit.load")
    return [n for n in list(sub.inputs) + list(sub.nodes) + list(sub.outputs) if not _records(n)]


def _records(node):
    """A node of a loop's recording machinery (WhileLoop.record makes them again when the file is loaded)."""
    from ..control_flow.stacks import StackInput, StackPush
    return isinstance(node, (StackInput, StackPush))


def _subgraph_json(sub):
    return {"nodes": [n.name for n in sub.nodes if not _records(n)],
            "inputs": [n.name for n in sub.inputs], "outputs": [n.name for n in sub.outputs]}


def _node_json(node, arrays):
    entry = {"name": node.name, "shape": None if node.shape is None else list(node.shape),
             "dtype": node.dtype.str if node.dtype is not None else None,
             "inputs": [i.name for i in node.inputs]}
    if isinstance(node, Placeholder):
        entry["type"] = "Placeholder"
        if node.default is not None:
            entry["default"] = encode(np.asarray(node.default))
    elif isinstance(node, (Variable, Constant)):
        key = f"{'param' if isinstance(node, Variable) else 'const'}_{len(arrays)}"
        arrays[key] = np.array(node.value, order="C")  # (ascontiguousarray would make scalars 1-d)
        entry.update(type="Variable" if isinstance(node, Variable) else "Constant", value=key)
        if isinstance(node, Variable):
            entry["trainable"] = node.trainable
    elif isinstance(node, Operation):
        entry["type"] = node.op_type
        if getattr(node, "stateful", False):
            raise TinyflowError(f"cannot save {node.op_type} '{node.name}': a saved program must not change state "
                                "(save the model's forward function, not a training step)")
        if node.op_type == "Cond":
            entry["control_flow"] = {"true": _subgraph_json(node.true_branch),
                                     "false": _subgraph_json(node.false_branch)}
        elif node.op_type == "WhileLoop":
            entry["control_flow"] = {"n_vars": node.n_vars, "maximum_iterations": node.maximum_iterations,
                                     "test": _subgraph_json(node.test), "body": _subgraph_json(node.body),
                                     "recorded": [r.node.name for r in node.recorded]}  # rebuilt by WhileLoop.record
        else:
            try:
                entry["attrs"] = {k: encode(v) for k, v in op_attributes(node).items()}
            except TypeError as err:
                raise TinyflowError(f"cannot save {node.op_type} '{node.name}': {err}") from None
    else:
        raise TinyflowError(f"cannot save node {node!r} of kind {type(node).__name__}")
    return entry


def save(layer_or_fn, path, input_spec=None):
    """Trace `layer_or_fn` (evaluation mode) and write `path`.json (graph) and `path`.npz (parameters)."""
    program = _program_of(layer_or_fn, input_spec)
    outputs = program.outputs
    if program.side_effects:
        raise TinyflowError(f"cannot save {program.fn_name}: it changes state ({program.side_effects[0].op_type} "
                            f"'{program.side_effects[0].name}'); a saved program must not change state (save the "
                            "model's forward function, not a training step)")
    bad = [o for o in outputs if not isinstance(o, Node)]
    if bad:
        raise TinyflowError(f"jit.save can only save tensor outputs; {program.fn_name} also returns {bad[0]!r}")
    arrays = {}
    description = {
        "format": FORMAT, "version": VERSION,
        "inputs": [{"node": p.name, "spec": s.to_json()} for p, s in zip(program.inputs, program.specs)],
        "outputs": [o.name for o in outputs], "single_output": program.structure is None,
        "nodes": [_node_json(n, arrays) for n in _nodes_of(outputs)],
    }
    json_path, npz_path = _paths(path)
    description["parameters"] = os.path.basename(npz_path)
    os.makedirs(os.path.dirname(os.path.abspath(json_path)), exist_ok=True)
    with open(json_path, "w") as f:
        json.dump(description, f, indent=1)
    np.savez(npz_path, **arrays)
    return json_path, npz_path


# ---------------------------------------------------------------- loading
class LoadedProgram:
    """A program read by jit.load: call it with arrays (batch dim dynamic); its parameters are Variables."""

    def __init__(self, graph, inputs, specs, outputs, single):
        self.graph, self.inputs, self.input_specs, self.outputs, self._single = graph, inputs, specs, outputs, single
        self._session = None

    def __repr__(self):
        return f"<tfl.jit loaded program: {len(self.inputs)} input(s) {self.input_specs}, {len(self.outputs)} output(s)>"

    def parameters(self):
        """The trainable Variables (fine-tune them with an optimizer on self.graph)."""
        return self.graph.variables(trainable_only=True)

    def __call__(self, *arrays):
        if len(arrays) != len(self.inputs):
            raise TinyflowError(f"this program takes {len(self.inputs)} input(s) {self.input_specs}, got {len(arrays)}")
        for spec, array, p in zip(self.input_specs, arrays, self.inputs):
            spec.check(np.asarray(array), f"input '{p.name}'")
        if self._session is None:
            from ..session import Session
            self._session = Session(self.graph)
        values = self._session.run(self.outputs, dict(zip(self.inputs, arrays)))
        return values[0] if self._single else values


def _fail(message):
    raise CheckpointError(f"cannot load the model: {message}")


def _read_description(json_path):
    try:
        size = os.path.getsize(json_path)
    except OSError as err:
        _fail(f"{json_path} cannot be read ({err.strerror})")
    if size > MAX_JSON_BYTES:
        _fail(f"{json_path} is {size} bytes, more than any tinyflow model description ({MAX_JSON_BYTES})")
    try:
        with open(json_path, encoding="utf-8") as f:
            description = json.load(f)
    except (ValueError, RecursionError) as err:  # ValueError covers UnicodeDecodeError
        _fail(f"{json_path} is not valid JSON, or nested too deeply for a model description ({err})")
    if not isinstance(description, dict) or description.get("format") != FORMAT:
        _fail(f"{json_path} is not a tinyflow.jit model description")
    if description.get("version") != VERSION:
        _fail(f"{json_path} has format version {description.get('version')!r}; this tinyflow reads version {VERSION}")
    for key, kind in (("nodes", list), ("inputs", list), ("outputs", list), ("parameters", str)):
        if not isinstance(description.get(key), kind):
            _fail(f"{json_path}: '{key}' is missing or not a {kind.__name__}")
    return description


def _read_arrays(npz_path):
    try:
        with np.load(npz_path, allow_pickle=False) as archive:
            return {key: archive[key] for key in archive.files}
    except (OSError, ValueError, EOFError, MemoryError, zipfile.BadZipFile, zlib.error) as err:
        _fail(f"the parameter file {npz_path} cannot be read: it is damaged or not a .npz file "
              f"({type(err).__name__}: {err})")


def load(path):
    """Rebuild a saved program in a new Graph from tinyflow's op registry; returns a LoadedProgram."""
    json_path, _ = _paths(path)
    description = _read_description(json_path)
    name = description["parameters"]
    if os.path.basename(name) != name or name in ("", ".", "..") or not name.endswith(".npz"):
        _fail(f"the parameter file name {name!r} must be a plain .npz file name next to {json_path}")
    arrays = _read_arrays(os.path.join(os.path.dirname(os.path.abspath(json_path)), name))
    try:
        return _build_program(description, arrays)
    except CheckpointError as err:
        raise CheckpointError(f"{err} (in {json_path})") from None


def _build_program(description, arrays):
    graph = Graph()
    built = {}
    with graph.as_default(), graph.name_scope(""):
        for entry in description["nodes"]:
            try:
                node = _build_node(entry, built, arrays)
            except CheckpointError:
                raise
            except (TinyflowError, TypeError, ValueError, KeyError, IndexError, AttributeError, RecursionError) as err:
                _fail(f"node {str(entry.get('name'))[:80]!r} ({str(entry.get('type'))[:40]}): "
                      f"{type(err).__name__}: {err}")
            if node.name != entry["name"]:
                _fail(f"node name {entry['name']!r} appears twice")
            built[entry["name"]] = node
    try:
        inputs = [built[i["node"]] for i in description["inputs"]]
        specs = [InputSpec.from_json(i["spec"]) for i in description["inputs"]]
        outputs = [built[o] for o in description["outputs"]]
    except (KeyError, TypeError, ValueError) as err:
        _fail(f"inputs/outputs name unknown nodes or bad specs ({err})")
    if not all(isinstance(p, Placeholder) for p in inputs):
        _fail("every input must be a Placeholder")
    return LoadedProgram(graph, inputs, specs, outputs, bool(description.get("single_output", True)))


def _shape(data):
    if data is None:
        return None
    if not isinstance(data, list) or not all(d is None or (isinstance(d, int) and d >= 0) for d in data):
        _fail(f"bad shape {str(data)[:80]}")
    return tuple(data)


def _build_node(entry, built, arrays):
    if not isinstance(entry, dict) or not isinstance(entry.get("name"), str) or not isinstance(entry.get("type"), str):
        _fail(f"bad node entry {str(entry)[:80]}")
    name, kind, shape = entry["name"], entry["type"], _shape(entry.get("shape"))
    dtype = decode({"dtype": entry["dtype"]}) if entry.get("dtype") is not None else None
    inputs = []
    for input_name in entry.get("inputs", []):
        if input_name not in built:
            _fail(f"node {name!r} reads {str(input_name)[:80]!r}, which is not defined before it")
        inputs.append(built[input_name])
    if kind == "Placeholder":
        default = decode(entry["default"]) if "default" in entry else None
        return Placeholder(shape, dtype, name=name, default=default)
    if kind in ("Variable", "Constant"):
        key = entry.get("value")
        if key not in arrays:
            _fail(f"the parameter file has no array for {kind} {name!r}")
        value = arrays[key]
        if value.shape != shape or value.dtype != dtype:
            _fail(f"{kind} {name!r} should be {dtype} of shape {shape}, the parameter file has {value.dtype} "
                  f"of shape {value.shape}")
        if kind == "Constant":
            return Constant(value, name=name)
        return Variable(value, trainable=bool(entry.get("trainable", True)), name=name)
    if "control_flow" in entry:
        node = _build_control_flow(kind, entry["control_flow"], inputs, built, name)
    else:
        attrs = entry.get("attrs", {})
        if not isinstance(attrs, dict):
            _fail(f"node {name!r}: attributes must be an object")
        node = build_op(kind, inputs, {str(k): decode(v) for k, v in attrs.items()}, name=name)
    if not shapes_compatible(node.shape, shape) or (dtype is not None and node.dtype != dtype):
        _fail(f"{kind} {name!r} is recorded as {dtype} of shape {shape} but its inputs make it {node.dtype} of "
              f"shape {node.shape}")
    return node


def _subgraph(data, built, label):
    from ..control_flow import Subgraph
    try:
        nodes = [built[n] for n in data["nodes"]]
        inputs = [built[n] for n in data["inputs"]]
        outputs = [built[n] for n in data["outputs"]]
    except (KeyError, TypeError):
        _fail(f"control flow '{label}' names nodes that are not defined before it")
    graph = outputs[0].graph if outputs else None
    sub = Subgraph(graph, nodes, outputs, inputs, label)
    sub.single = len(outputs) == 1
    for node in list(sub.nodes) + list(sub.inputs):
        node.subgraph = sub
    return sub


def _build_control_flow(kind, data, inputs, built, name):
    from ..control_flow import Cond, WhileLoop
    if not isinstance(data, dict):
        _fail(f"node {name!r}: bad control-flow description")
    if kind == "Cond":
        node = Cond(inputs[0], _subgraph(data["true"], built, name + "/true"),
                    _subgraph(data["false"], built, name + "/false"), name=name)
    elif kind == "WhileLoop":
        n_vars = int(data["n_vars"])
        limit = data.get("maximum_iterations")
        node = WhileLoop(inputs[:n_vars], _subgraph(data["test"], built, name + "/test"),
                         _subgraph(data["body"], built, name + "/body"),
                         None if limit is None else int(limit), name=name)
        for recorded in data.get("recorded", []):  # values the loop collects per iteration, in their order
            if recorded not in built or built[recorded] not in node.body.nodes + list(node.body.inputs):
                _fail(f"node {name!r} records {str(recorded)[:80]!r}, which is not a node of its body")
            node.record(built[recorded])
    else:
        _fail(f"node {name!r}: op type {kind!r} has no control flow")
    if [i.name for i in node.inputs] != [i.name for i in inputs]:
        _fail(f"node {name!r}: its recorded inputs do not match what its subgraphs read")
    return node
