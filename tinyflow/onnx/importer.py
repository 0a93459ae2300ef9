"""tfl.onnx.load: an ONNX model as a tinyflow graph made of tinyflow's own ops, so it runs, draws and trains.

The model is read and checked whole first (model_file.py), then built in topological order: graph inputs become
Placeholders, float initializers Variables, other known values Constants, and each node what its rule (rules/)
builds, named after the ONNX node ("/layer1/conv/Conv" is "Conv" in the name scope "layer1/conv"). A node whose
inputs are all known at import time is computed on the spot while that fits in what is left of FOLD_BYTES.
"""
import collections

import numpy as np

from ..errors import ArgumentError, FeedError, OnnxImportError, TinyflowError
from ..graph import Graph, get_default_graph
from ..nodes import Constant, Node, Placeholder, Variable
from ..ops.array_ops import known_entries
from ..shapes import shapes_compatible
from .model_file import (check_graphs, declared_type, default_opset, describe, onnx_module, read_model, subgraphs,
                         tensor_bytes, tensor_to_array)
from .rules import IMPORTS, REQUIRED
from .storage_types import STORAGE_TYPES, RoundToType, narrow_dtype, onnx_type, to_held

FOLD_BYTES = 256 << 20  # what computing on the spot may allocate in one import, all nodes together
_ATTRIBUTE_KINDS = ("FLOAT", "INT", "STRING", "TENSOR", "GRAPH", "FLOATS", "INTS", "STRINGS", "TENSORS", "GRAPHS")


class NeedsConstantInput(OnnxImportError):
    """A rule needs the value of a graph input while importing (e.g. the `shape` of Reshape fed as an input)."""

    def __init__(self, message, input_name):
        super().__init__(message, unsupported=True)
        self.input_name = input_name


class _Value:
    """One ONNX value: its tinyflow node once made, its array when known at import time."""

    __slots__ = ("name", "node", "array", "parameter", "missing", "narrow")

    def __init__(self, name, node=None, array=None, parameter=False, missing=None, narrow=None):
        self.name, self.node, self.array, self.parameter, self.missing = name, node, array, parameter, missing
        self.narrow = narrow  # the ONNX code of a narrow type whose values this holds (storage_types.py), or None
        if array is not None:
            array.flags.writeable = False  # shared by every rule that reads it

    @classmethod
    def of(cls, name, result, producer=None):
        """The value a rule made: a node (a Constant's array known), an array, or None (an output not computed)."""
        if result is None:
            return cls(name, missing=describe(producer))
        if isinstance(result, Node):
            return cls(name, node=result, array=result.value if isinstance(result, Constant) else None)
        return cls(name, array=np.array(result))

    def known(self, field):
        """Its "shape" or "dtype": the array's when known, else the node's."""
        return getattr(self.array if self.array is not None else self.node, field)


class ImportContext:
    """What an import rule sees of its node (the rule API, see rules/__init__.py): inputs, attributes, errors."""

    def __init__(self, importer, node, scope, name, folding=False):
        self.node, self.op_type, self.name, self.opset = node, node.op_type, name, importer.opset
        self.num_inputs, self.num_outputs = len(node.input), len(node.output)
        self._importer, self._scope, self.folding = importer, scope, folding
        self._attributes = {a.name: a for a in node.attribute}
        self._read, self._folded_inputs = set(), {}

    def _value(self, i):
        name = self.node.input[i] if i < len(self.node.input) else ""
        return self._scope[name] if name else None  # check_graphs made sure every name read is defined

    def input(self, i, trainable=None):
        """The tinyflow node of input i (None when omitted); trainable=False: an initializer's frozen Variable."""
        value = self._value(i)
        if value is None:
            return None
        if self.folding:  # computing on the spot: the known values as constants of a scratch graph
            if i not in self._folded_inputs:
                self._folded_inputs[i] = Constant(value.array)
            return self._folded_inputs[i]
        return self._importer.node_of(value, self, trainable)

    def inputs(self):
        """The tinyflow nodes of all inputs (None for omitted optional ones)."""
        return [self.input(i) for i in range(self.num_inputs)]

    def has_input(self, i):
        """True when input i is given (not omitted)."""
        return self._value(i) is not None

    def value(self, i):
        """Input i's value if it is known at import time (a read-only numpy array), else None."""
        return getattr(self._value(i), "array", None)

    def static(self, i, what):
        """Input i's value, which must be known at import time; `what` names it in the error otherwise."""
        value = self._value(i)
        if value is None:
            raise self.fail(f"its {what} (input {i}) is missing")
        if value.array is not None:
            return value.array
        if isinstance(value.node, Placeholder) and value.name in self._importer.inputs:
            raise NeedsConstantInput(
                f"{self._where()}: its {what} (input {i}) is the graph input '{value.name}', but tinyflow needs it "
                f"when the graph is built; fix it with tfl.onnx.load(..., constants={{'{value.name}': value}})",
                value.name)
        raise self.unsupported(f"its {what} (input {i}, '{value.name}') is computed at run time, but tinyflow needs "
                               "it when the graph is built (a constant, an initializer, or computed from static "
                               "shapes)")

    def known_ints(self, i):
        """Input i's entries as ints if known when the graph is built (constants, shape arithmetic on static sizes)."""
        value = self.value(i)
        entries = known_entries(self.input(i)) if value is None else value.reshape(-1).tolist()
        return None if entries is None or None in entries else [int(v) for v in entries]

    def ints(self, i, what, attribute=None, default=None):
        """Ints from input i (known when the graph is built), else from `attribute` (older opsets), else `default`."""
        if self.has_input(i):
            entries = self.known_ints(i)
            return entries if entries is not None else self.static(i, what)  # (static raises: it is not known)
        value = None if attribute is None else self.attr(attribute, None)
        return default if value is None else [int(v) for v in np.reshape(value, -1)]

    def input_shape(self, i, what=None, known=slice(0)):
        """Input i's static shape (None: unknown rank or omitted); given `what`, shape[known] must be fully known."""
        value = self._value(i)
        shape = None if value is None else value.known("shape")
        if what is not None and (shape is None or None in shape[known]):
            raise self.unsupported(f"{what} an input of {'unknown rank' if shape is None else f'shape {shape}'}")
        return shape

    def elem_type(self, i):
        """The ONNX element type of input i; a narrow type's (bfloat16, float8, ...) when it holds one's values."""
        value = self._value(i)
        if value.narrow is not None:
            return value.narrow
        return value.node.elem_type if isinstance(value.node, RoundToType) else onnx_type(value.known("dtype"))

    def output_used(self, k):
        """True when output k is named (an optional output nobody reads has an empty name)."""
        return k < len(self.node.output) and bool(self.node.output[k])

    def attr(self, name, default=REQUIRED):
        """The attribute as a Python value (int, float, str, list, array, GraphProto); required without a default."""
        self._read.add(name)
        attr = self._attributes.get(name)
        if attr is None:
            if default is REQUIRED:
                raise self.fail(f"it lacks the required attribute '{name}'")
            return default
        onnx = onnx_module()
        kind = onnx.AttributeProto.AttributeType.Name(attr.type)
        if kind not in _ATTRIBUTE_KINDS:
            raise self.unsupported(f"its attribute '{name}' is of type {kind}")

        def python(item):  # strings decoded, tensors as arrays
            if isinstance(item, bytes):
                return item.decode("utf-8", "replace")
            if isinstance(item, onnx.TensorProto):
                return tensor_to_array(item, self._importer.folder, f"the attribute '{name}' of {describe(self.node)}")
            return item
        raw = onnx.helper.get_attribute_value(attr)  # a list for the plural kinds
        return [python(item) for item in raw] if kind.endswith("S") else python(raw)

    def has_attr(self, name):
        """True when the node carries the attribute."""
        return name in self._attributes

    def _where(self):
        return f"{describe(self.node)} (opset {self.opset})"

    def fail(self, message):
        """An OnnxImportError for an invalid node, naming op type, node and opset (raise it)."""
        return OnnxImportError(f"{self._where()}: {message}")

    def unsupported(self, message):
        """An OnnxImportError for valid ONNX tinyflow does not import, naming op type, node and opset (raise it)."""
        return OnnxImportError(f"{self._where()}: {message} (not supported by tinyflow's import)", unsupported=True)

    def import_graph(self, graph, inputs=()):
        """Import an ONNX subgraph (If branch, Loop body) with its inputs bound to `inputs`; returns its outputs."""
        inputs, importer = list(inputs), self._importer
        if len(graph.input) != len(inputs):
            raise self.fail(f"its subgraph '{graph.name}' takes {len(graph.input)} inputs, but {len(inputs)} are given")
        scope = self._scope.new_child()
        for value_info, given in zip(graph.input, inputs):
            scope[value_info.name] = _Value.of(value_info.name, given)
        importer._bind_initializers(graph, scope)
        base, importer.base = importer.base, importer.graph.current_scope  # its nodes go in the current scope
        try:
            importer._walk(graph, scope)
            return [importer.node_of(scope[out.name], self) for out in graph.output]
        finally:
            importer.base = base


class _Importer:
    """Builds one model into a tinyflow graph."""

    def __init__(self, model, folder, graph, scope, trainable, constants):
        self.model, self.folder, self.graph, self.trainable = model, folder, graph, trainable
        self.constants = dict(constants or {})
        self.base = f"{scope.strip('/')}/" if scope else ""
        self.opset = default_opset(model)
        self.graphs = check_graphs(model, self.opset, IMPORTS)  # id(graph) -> (graph, node order, free names)
        self.variables, self.inputs, self.fold_left = [], {}, FOLD_BYTES  # inputs: ONNX name -> Placeholder

    def build(self):
        """(inputs, outputs): ONNX name -> node dicts, in the model's order."""
        g = self.model.graph
        scope = collections.ChainMap()  # ONNX name -> _Value; a subgraph's scope reads its parents'
        with self.graph.as_default():
            self._bind_initializers(g, scope)
            self._bind_inputs(g, scope)
            self._walk(g, scope)
            outputs = {out.name: self.node_of(scope[out.name], None) for out in g.output}
        return self.inputs, outputs

    def _walk(self, graph, scope):
        declared = {v.name: v for v in list(graph.value_info) + list(graph.output)}
        for node in self.graphs[id(graph)][1]:
            self._import_node(node, scope, declared)

    def _bind_initializers(self, graph, scope):
        for tensor in graph.initializer:
            array = tensor_to_array(tensor, self.folder, f"the initializer '{tensor.name}'")
            # only floating-point tensors are parameters one can train
            scope[tensor.name] = _Value(tensor.name, array=array, parameter=array.dtype.kind == "f")

    def _bind_inputs(self, graph, scope):
        unknown = set(self.constants) - {v.name for v in graph.input}
        if unknown:
            raise OnnxImportError(f"constants= names {sorted(unknown)}, which are not inputs of the model; its "
                                  f"inputs are {[v.name for v in graph.input]}")
        for value_info in graph.input:
            name = value_info.name
            if name in scope:  # an initializer listed as an input too (older exporters): a default value
                continue
            shape, dtype = declared_type(value_info, f"the graph input '{name}'")
            if name in self.constants:
                array = np.asarray(to_held(self.constants[name]), dtype=dtype)
                if shape is not None and not shapes_compatible(shape, array.shape):
                    raise OnnxImportError(f"constants['{name}'] has shape {array.shape}, but the model declares "
                                          f"the input '{name}' with shape {shape}")
                scope[name] = _Value(name, array=np.array(array))
                continue
            with self.graph.name_scope(self.base):
                node = self.inputs[name] = Placeholder(shape, dtype, name=_clean(name))
            elem_type = value_info.type.tensor_type.elem_type  # a narrow type's values are held in a wider dtype
            scope[name] = _Value(name, node=node, narrow=elem_type if elem_type in STORAGE_TYPES else None)

    def _import_node(self, node, scope, declared):
        rule = IMPORTS[node.op_type]
        prefix, _, name = _clean(node.name).rpartition("/")  # the node's name scope and its nodes' name
        scope_name = f"{self.base}{prefix}/" if prefix else self.base
        subs = subgraphs(node)
        known = [scope[i] for i in node.input if i]
        folding = bool(known) and not subs and all(v.array is not None and not v.parameter for v in known)
        ctx = ImportContext(self, node, scope, name or None, folding=folding)
        for sub in subs:  # parameters a branch or body reads are made outside it, where they belong
            for free in self.graphs[id(sub)][2]:
                if scope[free].parameter:
                    self.node_of(scope[free], ctx)
        try:
            results = self._fold(rule, ctx) if folding else None
            if results is None:
                if folding:  # too big to compute now: its value is computed at run time
                    ctx = ImportContext(self, node, scope, name or None)
                with self.graph.name_scope(scope_name):
                    results = _as_outputs(rule(ctx, node), ctx)
        except OnnxImportError:
            raise
        except ArgumentError as err:  # a valid ONNX attribute value that tinyflow's op does not take
            raise ctx.unsupported(f"tinyflow's op refuses it: {err}") from err
        except TinyflowError as err:
            raise ctx.fail(f"tinyflow cannot build it: {err}") from err
        except Exception as err:  # noqa: BLE001 - a rule that breaks still names the node it was importing
            raise ctx.fail(f"its import rule failed ({type(err).__name__}: {err})") from err
        unread = sorted(set(ctx._attributes) - ctx._read)
        if unread:
            raise ctx.unsupported(f"the attribute(s) {unread} are not handled by the import rule of {node.op_type}")
        for out, result in zip(node.output, results):
            if isinstance(result, Node) and result.shape is not None:
                tensor_bytes(result.shape, result.dtype, f"{ctx._where()}: its output '{out}'")
            if out:  # (an omitted optional output has an empty name)
                scope[out] = _Value.of(out, result, node)
                if out in declared:
                    self._check_declared(scope[out], declared[out], ctx)

    def _fold(self, rule, ctx):
        """Run the rule on constants in a scratch graph and compute its outputs now (None: too big to)."""
        scratch = Graph()
        with scratch.as_default():
            results = _as_outputs(rule(ctx, ctx.node), ctx)
        made = [n for n in scratch.nodes if not isinstance(n, Constant)]
        if any(n.shape is None or None in n.shape for n in made):
            return None  # a size known only once computed: it may be anything
        cost = sum(tensor_bytes(n.shape, n.dtype, f"{ctx._where()}: the value '{n.name}' it computes")
                   + 8 * sum(n.shape) for n in made)  # numpy's temporaries may be as long as a dim (triu's arange)
        if cost > self.fold_left:
            return None
        self.fold_left -= cost
        values = {}
        for n in scratch.nodes:  # in the order they were made, which is topological: numpy's reference kernels
            value = n.value if isinstance(n, Constant) else np.asarray(n.compute(*[values[i] for i in n.inputs]))
            values[n] = value if n.dtype is None else value.astype(n.dtype, copy=False)
        return [values[r] if isinstance(r, Node) else r for r in results]

    def _check_declared(self, value, value_info, ctx):
        """A value whose shape or dtype contradicts what the model declares for it is an error, found now."""
        try:
            shape, dtype = declared_type(value_info, f"the value '{value.name}'")
        except OnnxImportError:
            return  # types tinyflow does not compute with cannot have been produced here
        got_shape, got_dtype = value.known("shape"), value.known("dtype")
        if not shapes_compatible(shape, got_shape):
            raise ctx.fail(f"the model declares its output '{value.name}' with shape {shape}, but its inputs give "
                           f"shape {got_shape}; the model's shapes contradict its inputs")
        if got_dtype is not None and dtype != got_dtype:
            raise ctx.fail(f"the model declares its output '{value.name}' as {dtype}, but tinyflow computes "
                           f"{got_dtype}")

    def node_of(self, value, ctx, trainable=None):
        """The tinyflow node of a value, made on first use from its known array (Variable or Constant)."""
        if value.node is not None:
            return value.node
        if value.missing is not None:
            where = f"{ctx._where()} reads" if ctx is not None else "the graph outputs"
            raise OnnxImportError(f"{where} '{value.name}', an optional output of {value.missing} that tinyflow's "
                                  "import does not compute", unsupported=True)
        with self.graph.name_scope(self.base):
            if value.parameter:
                trainable = self.trainable if trainable is None else trainable and self.trainable
                value.node = Variable(value.array, trainable=trainable, name=_clean(value.name))
                self.variables.append(value.node)
            else:
                value.node = Constant(value.array, name=_clean(value.name))
        return value.node


def _clean(name):
    """An ONNX name as a tinyflow node name: torch's leading '/' dropped."""
    return name.lstrip("/")


def _as_outputs(result, ctx):
    """A rule's result as a list with one entry per ONNX output."""
    results = list(result) if isinstance(result, (tuple, list)) else [result]
    if len(results) < ctx.num_outputs or any(r is not None for r in results[ctx.num_outputs:]):  # (None: unused)
        raise ctx.fail(f"its import rule returned {len(results)} result(s) for {ctx.num_outputs} output(s)")
    return results[:ctx.num_outputs]


class OnnxProgram:
    """An imported ONNX model: its tinyflow graph, input Placeholders, output nodes and Variables."""

    def __init__(self, importer, inputs, outputs):
        model, self.opset = importer.model, importer.opset
        self.graph, self.inputs, self.outputs, self.variables = importer.graph, inputs, outputs, importer.variables
        self.producer = f"{model.producer_name} {model.producer_version}".strip() or "unknown"
        self.model_name = model.graph.name
        counts = collections.Counter(n.op_type for _, order, _ in importer.graphs.values() for n in order)
        # ONNX op type -> number of nodes (subgraphs included), most frequent first
        self.op_counts = dict(sorted(counts.items(), key=lambda item: (-item[1], item[0])))
        self.narrow_outputs = {v.name: narrow_dtype(v.type.tensor_type.elem_type) for v in model.graph.output
                               if v.type.tensor_type.elem_type in STORAGE_TYPES}  # as onnx's numpy_helper gives them
        self._sessions = {}

    def __repr__(self):
        ins = ", ".join(f"{k}: {p.shape}" for k, p in self.inputs.items())
        return (f"<OnnxProgram '{self.model_name}' (opset {self.opset}, from {self.producer}): ({ins}) -> "
                f"({', '.join(self.outputs)}), {len(self.variables)} Variables>")

    def summary(self):
        """A few lines about the model: inputs, outputs, ONNX op counts, parameters."""
        def described(items):
            return [f"  {name}: {n.dtype} {'unknown shape' if n.shape is None else n.shape}" for name, n in items]
        sizes = {kind: [int(np.prod(v.shape)) for v in self.variables if v.trainable == kind]
                 for kind in (True, False)}
        return "\n".join([
            f"graph '{self.model_name}', ONNX opset {self.opset}, produced by {self.producer}", "inputs:",
            *(described(self.inputs.items()) or ["  (none)"]), "outputs:", *described(self.outputs.items()),
            f"ONNX ops ({sum(self.op_counts.values())} nodes): "
            + ", ".join(f"{op} {n}" for op, n in self.op_counts.items()),
            f"parameters: {sum(sizes[True]):,} in {len(sizes[True])} trainable Variables"
            + (f", {sum(sizes[False]):,} more in {len(sizes[False])} non-trainable ones" if sizes[False] else ""),
            f"tinyflow graph: {len(self.graph.nodes)} nodes"])

    def feed_dict(self, feeds):
        """{Placeholder: value} from {ONNX input name or Placeholder: value}; FeedError for unknown or missing names."""
        by_node = {p: p for p in self.inputs.values()}
        feed_dict = {}
        for key, value in dict(feeds or {}).items():
            node = self.inputs.get(key) if isinstance(key, str) else by_node.get(key)
            if node is None:
                raise FeedError(f"{key!r} is not an input of the model; its inputs are "
                                f"{', '.join(f'{k!r} (shape {p.shape}, {p.dtype})' for k, p in self.inputs.items())}")
            feed_dict[node] = to_held(value)
        missing = [k for k, p in self.inputs.items() if p not in feed_dict]
        if missing:
            raise FeedError(f"no value for the model input(s) {', '.join(repr(k) for k in missing)}; pass "
                            f"prog({{{', '.join(f'{k!r}: array' for k in missing)}}})")
        return feed_dict

    def session(self, backend=None, optimize=None):
        """The Session the program runs in on a backend (made at first use, then kept)."""
        from ..session import Session
        key = (backend, repr(optimize))
        if key not in self._sessions:
            self._sessions[key] = Session(self.graph, backend=backend, optimize=optimize)
        return self._sessions[key]

    def __call__(self, feeds=None, backend=None, optimize=None):
        """Run the model: {ONNX input name: array} in, {ONNX output name: numpy array} out."""
        values = self.session(backend, optimize).run(list(self.outputs.values()), self.feed_dict(feeds))
        return {name: value.astype(self.narrow_outputs[name]) if name in self.narrow_outputs else value
                for name, value in zip(self.outputs, values)}


def load(model, trainable=True, scope=None, constants=None, graph=None):
    """Import an ONNX model (path, bytes or onnx.ModelProto) into a tinyflow graph; returns an OnnxProgram.

    `trainable`: for the Variables of float initializers. `scope`: a name scope for every node (two models in one
    graph). `constants`: {graph input name: value} fixed when the graph is built (a shape, say)."""
    proto, folder = read_model(model)
    graph = graph if graph is not None else get_default_graph()
    importer = _Importer(proto, folder, graph, scope, trainable, constants)
    start = len(graph.nodes)
    try:
        inputs, outputs = importer.build()
    except BaseException:
        graph.discard(graph.nodes[start:])  # a failed import leaves the graph as it was
        raise
    return OnnxProgram(importer, inputs, outputs)


def run(model, inputs, backend=None):
    """Import a model into a fresh graph and run it once (inputs it needs fixed, e.g. axes, bound to the values)."""
    program = load_fixing(model, inputs, [])
    return program({name: value for name, value in inputs.items() if name in program.inputs}, backend=backend)


def load_fixing(model, feeds, fixed):
    """The model imported into a fresh graph with the inputs named in `fixed` (a list it extends) bound to `feeds`."""
    while True:
        try:
            return load(model, constants={name: np.asarray(feeds[name]) for name in fixed}, graph=Graph())
        except NeedsConstantInput as err:
            if err.input_name in fixed or err.input_name not in feeds:
                raise
            fixed.append(err.input_name)
