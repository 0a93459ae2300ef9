"""jit.save / jit.load: a traced program as JSON (ops, attributes, edges, input specs) plus parameters in .npz.

    tfl.jit.save(model, "out/model", input_spec=[InputSpec([None, 13])])   # out/model.json + out/model.npz
    m = tfl.jit.load("out/model"); m(x)    # no model code needed: ops come from tinyflow's op registry

Loading never runs code from the files (registered op types, plain attribute values, numeric arrays without pickle);
anything unexpected in them is a CheckpointError.
"""
import json
import os
import zipfile
import zlib

import numpy as np

from ..checkpoint import write_atomically
from ..control_flow import Cond, Subgraph, WhileLoop
from ..control_flow.stacks import StackInput, StackPush
from ..errors import CheckpointError, TinyflowError
from ..graph import Graph, ancestors
from ..nodes import Constant, Node, Operation, Placeholder, Variable
from ..session import Session
from ..shapes import normalize_shape, shapes_compatible
from .ops_io import build_op, decode, encode, op_attributes
from .static_function import InputSpec, StaticFunction

FORMAT = "tinyflow.jit"
VERSION = 2  # 2: a cond or loop is one op with several outputs, read by Output nodes
MAX_JSON_BYTES = 64 << 20   # a description bigger than this is not a model we wrote


def _paths(path):
    root = os.fspath(path).removesuffix(".json")
    return root + ".json", root + ".npz"


def program_of(layer_or_fn, input_spec, caller="tfl.jit.save", error=TinyflowError):
    function = layer_or_fn if isinstance(layer_or_fn, StaticFunction) else StaticFunction(layer_or_fn, input_spec)
    specs = input_spec if input_spec is not None else function.input_spec
    if specs is None and not function.concrete_programs:
        raise error(f"{caller} traces the program on inputs of known shapes and dtypes: pass input_spec="
                    "[tfl.jit.InputSpec([None, 13], 'float32')] (one InputSpec per input, None for the batch "
                    "dimension), or call the tfl.jit.to_static function once before")
    if specs is None:
        return function.concrete_programs[-1]
    training, function.training = function.training, False
    try:
        return function.get_concrete_program(*specs)
    finally:
        function.training = training


def _saved(nodes):
    """The nodes saved of a subgraph: not a loop's recording machinery (WhileLoop.record makes it again)."""
    return [n for n in nodes if not isinstance(n, (StackInput, StackPush))]


def _nodes_of(outputs):
    """Every node the outputs need, control-flow subgraphs included, in creation order."""
    found = ancestors(outputs)
    pending = [n for n in found if hasattr(n, "subgraphs")]
    while pending:
        subgraphs = [sub for n in pending for sub in n.subgraphs]
        for sub in subgraphs:  # the stacks a loop records for its gradient are rebuilt by gradients()
            if sub.restores:
                raise TinyflowError(f"cannot save '{sub.label}', the body of a while_loop's gradient loop: save the "
                                    "forward function, and build gradients after tfl.jit.load")
        inner = ancestors(_saved([n for s in subgraphs for n in list(s.inputs) + list(s.nodes) + list(s.outputs)]))
        pending = [n for n in inner - found if hasattr(n, "subgraphs")]
        found |= inner
    return sorted(found, key=lambda n: n.creation_index)


def _subgraph_json(sub):
    return {"nodes": [n.name for n in _saved(sub.nodes)], "inputs": [n.name for n in sub.inputs],
            "outputs": [n.name for n in sub.outputs]}


def _node_json(node, arrays):
    entry = {"name": node.name, "shape": None if node.shape is None else list(node.shape),
             "dtype": node.dtype.str if node.dtype is not None else None, "inputs": [i.name for i in node.inputs]}
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
    elif not isinstance(node, Operation):
        raise TinyflowError(f"cannot save node {node!r} of kind {type(node).__name__}")
    elif node.op_type == "Cond":
        entry.update(type="Cond", control_flow={"true": _subgraph_json(node.true_branch),
                                                "false": _subgraph_json(node.false_branch)})
    elif node.op_type == "WhileLoop":  # the values it records are rebuilt by WhileLoop.record
        entry.update(type="WhileLoop", control_flow={
            "n_vars": node.n_vars, "maximum_iterations": node.maximum_iterations, "test": _subgraph_json(node.test),
            "body": _subgraph_json(node.body), "recorded": [r.node.name for r in node.recorded]})
    else:
        try:
            entry.update(type=node.op_type, attrs={k: encode(v) for k, v in op_attributes(node).items()})
        except TypeError as err:
            raise TinyflowError(f"cannot save {node.op_type} '{node.name}': {err}") from None
    return entry


def save(layer_or_fn, path, input_spec=None):
    """Trace `layer_or_fn` (evaluation mode) and write `path`.json (graph) and `path`.npz (parameters)."""
    program = program_of(layer_or_fn, input_spec)
    bad = [o for o in program.outputs if not isinstance(o, Node)]
    if bad:
        raise TinyflowError(f"jit.save can only save tensor outputs; {program.fn_name} also returns {bad[0]!r}")
    nodes = _nodes_of(program.outputs)
    changes = program.side_effects + [n for n in nodes if getattr(n, "stateful", False)]
    if changes:
        raise TinyflowError(f"cannot save {program.fn_name}: it changes state ({changes[0].op_type} "
                            f"'{changes[0].name}'); a saved program must not change state (save the model's forward "
                            "function, not a training step)")
    json_path, npz_path = _paths(path)
    arrays = {}
    description = {
        "format": FORMAT, "version": VERSION,
        "inputs": [{"node": p.name, "spec": {"shape": list(s.shape), "dtype": s.dtype.name, "name": s.name}}
                   for p, s in zip(program.inputs, program.specs)],
        "outputs": [o.name for o in program.outputs], "single_output": program.structure is None,
        "nodes": [_node_json(n, arrays) for n in nodes], "parameters": os.path.basename(npz_path),
    }
    # each file whole or not at all, as checkpoints are: a crash mid-save leaves no half-written model
    return (write_atomically(json_path, lambda f: f.write(json.dumps(description, indent=1).encode())),
            write_atomically(npz_path, lambda f: np.savez(f, **arrays)))


# ---------------------------------------------------------------- loading
class LoadedProgram:
    """A program read by jit.load: call it with arrays (batch dim dynamic); its parameters are Variables."""

    def __init__(self, graph, inputs, specs, outputs, single):
        self.graph, self.inputs, self.input_specs, self.outputs, self._single = graph, inputs, specs, outputs, single
        self._session = Session(graph)

    def __repr__(self):
        return (f"<tfl.jit loaded program: {len(self.inputs)} input(s) {self.input_specs}, "
                f"{len(self.outputs)} output(s)>")

    def parameters(self):
        """The trainable Variables (fine-tune them with an optimizer on self.graph)."""
        return self.graph.variables(trainable_only=True)

    def __call__(self, *arrays):
        if len(arrays) != len(self.inputs):
            raise TinyflowError(f"this program takes {len(self.inputs)} input(s) {self.input_specs}, got {len(arrays)}")
        for spec, array, p in zip(self.input_specs, arrays, self.inputs):
            spec.check(np.asarray(array), f"input '{p.name}'")
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


def load(path):
    """Rebuild a saved program in a new Graph from tinyflow's op registry; returns a LoadedProgram."""
    json_path, _ = _paths(path)
    description = _read_description(json_path)
    name = description["parameters"]
    if os.path.basename(name) != name or not name.endswith(".npz"):  # "", "." and ".." end otherwise
        _fail(f"the parameter file name {name!r} must be a plain .npz file name next to {json_path}")
    npz_path = os.path.join(os.path.dirname(os.path.abspath(json_path)), name)
    try:
        with np.load(npz_path, allow_pickle=False) as archive:
            arrays = {key: archive[key] for key in archive.files}
    except (OSError, ValueError, EOFError, MemoryError, zipfile.BadZipFile, zlib.error) as err:
        _fail(f"the parameter file {npz_path} cannot be read: it is damaged or not a .npz file "
              f"({type(err).__name__}: {err})")
    try:
        return _build_program(description, arrays)
    except CheckpointError as err:
        raise CheckpointError(f"{err} (in {json_path})") from None


def _build_program(description, arrays):
    graph, built = Graph(), {}
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
        specs = [InputSpec(**i["spec"]) for i in description["inputs"]]
        outputs = [built[o] for o in description["outputs"]]
    except (KeyError, TypeError, ValueError) as err:
        _fail(f"inputs/outputs name unknown nodes or bad specs ({err})")
    if not all(isinstance(p, Placeholder) for p in inputs):
        _fail("every input must be a Placeholder")
    return LoadedProgram(graph, inputs, specs, outputs, bool(description.get("single_output", True)))


def _build_node(entry, built, arrays):
    if not isinstance(entry, dict) or not isinstance(entry.get("name"), str) or not isinstance(entry.get("type"), str):
        _fail(f"bad node entry {str(entry)[:80]}")
    name, kind, shape = entry["name"], entry["type"], normalize_shape(entry.get("shape"))
    dtype = decode({"dtype": entry["dtype"]}) if entry.get("dtype") is not None else None
    for input_name in entry.get("inputs", []):
        if input_name not in built:
            _fail(f"node {name!r} reads {str(input_name)[:80]!r}, which is not defined before it")
    inputs = [built[i] for i in entry.get("inputs", [])]
    if kind == "Placeholder":
        return Placeholder(shape, dtype, name=name, default=decode(entry["default"]) if "default" in entry else None)
    if kind in ("Variable", "Constant"):
        value = arrays.get(entry.get("value"))
        if value is None:
            _fail(f"the parameter file has no array for {kind} {name!r}")
        if value.shape != shape or value.dtype != dtype:
            _fail(f"{kind} {name!r} should be {dtype} of shape {shape}, the parameter file has {value.dtype} "
                  f"of shape {value.shape}")
        return Constant(value, name=name) if kind == "Constant" else \
            Variable(value, trainable=bool(entry.get("trainable", True)), name=name)
    if "control_flow" in entry:
        node = _build_control_flow(kind, entry["control_flow"], inputs, built, name)
    elif not isinstance(entry.get("attrs", {}), dict):
        _fail(f"node {name!r}: attributes must be an object")
    else:
        node = build_op(kind, inputs, {str(k): decode(v) for k, v in entry.get("attrs", {}).items()}, name=name)
    if not shapes_compatible(node.shape, shape) or (dtype is not None and node.dtype != dtype):
        _fail(f"{kind} {name!r} is recorded as {dtype} of shape {shape} but its inputs make it {node.dtype} of "
              f"shape {node.shape}")
    return node


def _subgraph(data, built, label):
    try:
        nodes, inputs, outputs = ([built[n] for n in data[part]] for part in ("nodes", "inputs", "outputs"))
    except (KeyError, TypeError):
        _fail(f"control flow '{label}' names nodes that are not defined before it")
    sub = Subgraph(outputs[0].graph if outputs else None, nodes, outputs, inputs, label)
    sub.single = len(outputs) == 1
    sub.claim(list(sub.nodes) + list(sub.inputs))
    return sub


def _build_control_flow(kind, data, inputs, built, name):
    if not isinstance(data, dict):
        _fail(f"node {name!r}: bad control-flow description")
    if kind == "Cond":
        node = Cond(inputs[0], _subgraph(data["true"], built, name + "/true"),
                    _subgraph(data["false"], built, name + "/false"), name=name)
    elif kind == "WhileLoop":
        n_vars, limit = int(data["n_vars"]), data.get("maximum_iterations")
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
