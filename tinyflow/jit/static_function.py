"""to_static: trace a Python function or Layer into a graph once per input signature, then run the cached plan.

    f = tfl.jit.to_static(model, input_spec=[InputSpec([None, 13], "float32", "x")])
    f(x)   # first call: trace (build a Graph on Placeholders) and compile; later calls: run the cached plan

Programs are cached per signature (tensor shapes with the spec's None dims, dtypes, other arguments' values, the
training flag), at most MAX_PROGRAMS, least recently used first out; each retrace is logged on "tinyflow.jit" with its
reason ("x dim 0: 4 → 5"). Functions are converted once per code object (convert.py).
"""
import functools
import inspect
import logging
from collections import OrderedDict

import numpy as np

from ..eager import Tensor, is_grad_enabled
from ..errors import ArgumentError, ConversionError, FeedError, ShapeError, TinyflowError
from ..graph import PICTURES, ancestors, get_default_graph
from ..nodes import Node, Placeholder
from ..session import Session
from ..shapes import matches, normalize_shape
from .convert import convert_function
from .eager_call import call_recorded, why_not_recordable
from .inplace_tracing import current, newest, tracing
from .tensor_lists import Stacked
from .values import Undefined, flatten, rebuild

log = logging.getLogger("tinyflow.jit")
MAX_PROGRAMS = 8


class InputSpec:
    """Describes one input of a to_static program; `None` dims stay unknown, so one program serves them all."""

    def __init__(self, shape, dtype="float32", name=None):
        self.shape = normalize_shape(shape)
        if self.shape is None:
            raise ShapeError("InputSpec needs a shape: a list of ints, with None for dimensions of any size")
        self.dtype, self.name = np.dtype(dtype), name

    def __repr__(self):
        return f"InputSpec(shape={list(self.shape)}, dtype='{self.dtype.name}', name={self.name!r})"

    def check(self, array, what):
        """Raise FeedError unless `array` fits this spec (shape and a dtype castable without surprise)."""
        if not matches(self.shape, array.shape):
            raise FeedError(f"{what} has shape {array.shape} but its InputSpec says {list(self.shape)} "
                            "(None = any size); pass an array of that shape or change the input_spec")
        if array.dtype.kind not in "biuf":
            raise FeedError(f"{what} has dtype {array.dtype}; its InputSpec says {self.dtype}")


class ConcreteProgram:
    """One traced signature: its Placeholders, output nodes (and their nesting), side effects, and the run."""

    def __init__(self, graph, inputs, specs, outputs, structure, side_effects, training, fn_name, built):
        self.graph, self.inputs, self.specs, self.built = graph, inputs, specs, built  # built: the nodes it made
        self.outputs, self.structure, self.side_effects = outputs, structure, side_effects
        self.training, self.fn_name = training, fn_name
        self.training_feed = {} if graph.training_flag is None else {graph.training_flag: training}
        # the nodes one run fetches (outputs, then state updates): draw them with tfl.viz.to_graphviz
        self.fetches = [o for o in outputs if isinstance(o, Node)] + list(side_effects)
        self.function = None  # how eager autograd calls it, once it did (eager_call.py)

    def __repr__(self):
        shapes = ", ".join(f"{p.name}: {list(p.shape)} {p.dtype.name}" for p in self.inputs)
        return f"<ConcreteProgram {self.fn_name}({shapes}) -> {len(self.outputs)} output(s), training={self.training}>"

    def _repr_svg_(self):
        draw = PICTURES.get("svg")
        return None if draw is None else draw(self.fetches)

    def run(self, session, arrays):
        """Run the compiled plan on input arrays; the outputs in the traced structure (array results as Tensors)."""
        values = iter(session.run(self.fetches, {**dict(zip(self.inputs, arrays)), **self.training_feed}))
        return rebuild(self.structure, iter([Tensor(next(values)) if isinstance(o, Node) else o for o in self.outputs]))


class StaticFunction:
    """A function or Layer converted to static programs: call it like the original (numpy or Tensor in, Tensor out)."""

    def __init__(self, fn_or_layer, input_spec=None, max_programs=MAX_PROGRAMS):
        from ..nn.layer import Layer
        if isinstance(fn_or_layer, Layer):
            self._layer, self._function = fn_or_layer, type(fn_or_layer).forward
        elif inspect.ismethod(fn_or_layer):
            self._layer, self._function = fn_or_layer.__self__, fn_or_layer.__func__
        elif callable(fn_or_layer):
            self._layer, self._function = None, fn_or_layer
        else:
            raise ArgumentError(f"to_static takes a function or a tfl.nn.Layer, got {fn_or_layer!r}")
        if isinstance(self._function, StaticFunction):
            self._function = self._function._function
        self.input_spec = None if input_spec is None else list(input_spec)
        for spec in self.input_spec or []:
            if spec is not None and not isinstance(spec, InputSpec):
                raise ArgumentError(f"input_spec entries must be tfl.jit.InputSpec (or None), got {spec!r}")
        try:
            self._params = list(inspect.signature(self._function).parameters)[1 if self._layer is not None else 0:]
        except (TypeError, ValueError):
            self._params = []
        self.max_programs, self.training, self.retraces = max_programs, False, 0
        self._programs, self._sessions, self._bound = OrderedDict(), {}, {}
        self.__name__ = getattr(self._function, "__name__", type(fn_or_layer).__name__)
        self.__doc__ = getattr(self._function, "__doc__", None)

    def __repr__(self):
        return f"<tfl.jit.StaticFunction {self.__name__} with {len(self._programs)} program(s)>"

    def __get__(self, instance, owner):
        """`@to_static` on a Layer method: one StaticFunction per layer instance."""
        if instance is None:
            return self
        bound = self._bound.get(id(instance))
        if bound is None or bound._layer is not instance:
            bound = self._bound[id(instance)] = StaticFunction(self._function.__get__(instance, owner),
                                                               self.input_spec, self.max_programs)
        return bound

    # -- modes ----------------------------------------------------------------------
    def train(self, mode=True):
        """Trace and run in training mode (dropout active, batch statistics, update ops run)."""
        self.training = mode  # the static function owns its mode; the layer follows, so eager calls behave alike
        if self._layer is not None and hasattr(self._layer, "train"):
            self._layer.train(mode)
        return self

    def eval(self):
        """Trace and run in evaluation mode (the default, whatever the layer's eager mode)."""
        return self.train(False)

    # -- calling ----------------------------------------------------------------------
    def __call__(self, *args, **kwargs):
        if any(isinstance(a, Node) and a.graph is not None for a in list(args) + list(kwargs.values())):
            # called while building a graph (e.g. from another layer): build the ops in place
            with tracing():
                return current(self._converted()(*args, **kwargs))
        program, arrays, sources = self._program_for(args, kwargs)
        session = self._session(program.graph)
        recorded = call_recorded(program, session, arrays, sources)  # eager autograd sees the call as one op
        if recorded is not None:
            return rebuild(program.structure, iter([recorded]))  # `return [y]` stays a one-element list
        for value in sources:
            if isinstance(value, Tensor) and value.requires_grad and is_grad_enabled():
                raise TinyflowError(
                    f"{self.__name__} got a Tensor of shape {value.shape} that requires grad, but this program "
                    f"{why_not_recordable(program)}, so the gradient would be lost. Put the training step inside "
                    "the function (loss = ...; opt.minimize(loss) with a graph-mode optimizer such as "
                    "tfl.optim.Adam(1e-3)), or pass t.detach()")
        return program.run(session, arrays)

    def get_concrete_program(self, *args, **kwargs):
        """The ConcreteProgram serving these arguments (traced now if needed). Args may be arrays or InputSpecs."""
        return self._program_for(args, kwargs)[0]

    graph = get_concrete_program  # its .graph, .inputs, .fetches (draw them with tfl.viz)

    @property
    def concrete_programs(self):
        """The cached ConcretePrograms, least recently used first."""
        return list(self._programs.values())

    def _session(self, graph):
        if graph not in self._sessions:
            self._sessions[graph] = Session(graph)
        return self._sessions[graph]

    def _converted(self):
        fn = convert_function(self._function)
        return functools.partial(fn, self._layer) if self._layer is not None else fn

    def _signature(self, args, kwargs):
        """The cache key's (name, nesting, leaf entries) per argument, and the tensor arguments' arrays and values."""
        names = [self._params[i] if i < len(self._params) else f"arg{i}" for i in range(len(args))] + sorted(kwargs)
        specs, entries, arrays, sources = self.input_spec or [], [], [], []
        for i, (name, value) in enumerate(zip(names, list(args) + [kwargs[k] for k in sorted(kwargs)])):
            leaves, structure = flatten(value, dicts=True)  # in a tuple, list or dict: each tensor an input of its own
            spec = specs[i] if i < len(specs) and structure is None else None
            labels = [name] if structure is None else [f"{name}_{j}" for j in range(len(leaves))]
            entries.append((name, structure, tuple(self._leaf(label, leaf, spec, arrays, sources)
                                                   for label, leaf in zip(labels, leaves))))
        return tuple(entries), arrays, sources

    def _leaf(self, name, value, spec, arrays, sources):
        """An argument's cache key entry: ("tensor", name, shape, dtype, spec name) or ("value", name, value, ...)."""
        if not isinstance(value, (InputSpec, np.ndarray, Tensor)):
            try:
                return "value", name, value, _identity(value)
            except TypeError:
                raise TinyflowError(f"argument '{name}' of {self.__name__} is a {type(value).__name__}: to_static "
                                    "takes arrays, Tensors, hashable Python values (numbers, strings) and lists, "
                                    "tuples or dicts of those") from None
        array = None if isinstance(value, InputSpec) else value.numpy() if isinstance(value, Tensor) else value
        if isinstance(value, InputSpec):
            spec = value
        elif spec is not None:
            spec.check(array, f"argument '{name}' of {self.__name__}")
        arrays.append(array)
        sources.append(value)
        return ("tensor", name, array.shape, array.dtype, None) if spec is None else \
            ("tensor", name, spec.shape, spec.dtype, spec.name)

    def _program_for(self, args, kwargs):
        entries, arrays, sources = self._signature(args, kwargs)
        key = (entries, len(args), self.training)
        program = self._programs.get(key)
        if program is not None:
            self._programs.move_to_end(key)
            return program, arrays, sources
        if self._programs:
            self.retraces += 1
            log.info("tinyflow.jit: tracing %s again (%d program(s) cached): %s", self.__name__,
                     len(self._programs), _why(next(reversed(self._programs)), key))
        program = self._programs[key] = self._trace(key)
        session = self._sessions.get(program.graph)
        if session is not None:  # tracing grows the graph on purpose: not the leak the Session warns about
            session.accept_graph_growth()
        if len(self._programs) > self.max_programs:
            _, old = self._programs.popitem(last=False)
            _release(old, self._sessions.get(old.graph))
            log.warning("tinyflow.jit: %s has more than %d input signatures; dropped the least recently used "
                        "program. Use InputSpec with None for dimensions that change (e.g. the batch size).",
                        self.__name__, self.max_programs)
        return program, arrays, sources

    def _trace(self, key):
        entries, positional, training = key
        specs = [InputSpec(leaf[2], leaf[3], leaf[4] or leaf[1]) for _, _, leaves in entries for leaf in leaves
                 if leaf[0] == "tensor"]
        graph = self._layer.graph if self._layer is not None else get_default_graph()
        scope = f"{getattr(self._layer, 'scope', self.__name__)}/to_static" if self._layer else self.__name__
        with graph.as_default(), graph.name_scope(scope):
            placeholders = [Placeholder(s.shape, s.dtype, name=s.name) for s in specs]
            feeds = iter(placeholders)
            call = [rebuild(structure, iter([next(feeds) if leaf[0] == "tensor" else leaf[2] for leaf in leaves]))
                    for _, structure, leaves in entries]
            start, updates = len(graph.nodes), len(graph.update_ops)
            with tracing(external=placeholders):
                keywords = {entry[0]: value for entry, value in zip(entries[positional:], call[positional:])}
                outputs, structure = flatten(self._converted()(*call[:positional], **keywords), dicts=True)
                outputs = [newest(o) if isinstance(o, Node) else o for o in outputs]
            created = graph.nodes[start:]
        for (name, nesting, _), value in zip(entries, call):
            if nesting is not None and flatten(value, dicts=True)[1] != nesting:
                raise ConversionError(f"{self.__name__} changes its argument '{name}' (appends to it, or removes "
                                      "from it): to_static passes a copy holding each call's tensors, so the caller's "
                                      f"{type(value).__name__} would not change; return the values instead")
        for out in outputs:
            if isinstance(out, Undefined):
                out._fail()
            if isinstance(out, Stacked):
                raise ConversionError(f"{self.__name__} returns a list that a loop over a tensor appended to; return "
                                      "one tensor of it, e.g. tfl.concat(ys, 0) or tfl.add_n(ys)")
            if isinstance(out, Node) and out.graph is not graph:
                raise TinyflowError(f"{self.__name__} returned {out!r} from another graph")
        # state changes the function made (optimizer steps, assigns) run with every call, as in eager code
        new_updates = graph.update_ops[updates:]  # batch-norm statistics: run only in training mode
        excluded = ancestors(new_updates)
        side_effects = [n for n in created if getattr(n, "stateful", False) and getattr(n, "subgraph", None) is None
                        and n not in excluded and not any(getattr(c, "stateful", False) for c in n.consumers)]
        return ConcreteProgram(graph, placeholders, specs, outputs, structure,
                               side_effects + (new_updates if training else []), training, self.__name__,
                               placeholders + created)


def _release(program, session):
    """Drop a program's nodes (forward and backward) and plans, so that retracing again and again keeps memory flat."""
    graph, gone = program.graph, set(program.built)
    if program.function is not None:  # the backward graphs eager autograd built for it (eager_call.py)
        gone.update(program.function.all_built())
    for node in sorted(gone, key=lambda n: n.creation_index, reverse=True):
        if node is graph.training_flag or any(c not in gone for c in node.consumers):
            gone.discard(node)  # still read by a node that stays
    graph.discard(gone)
    if session is not None:
        session.drop_plans(gone)


def _identity(value):
    """What tells equal values apart in the cache key: 1 / True / 1.0 by type, 0.0 / -0.0 by sign."""
    hash(value)  # a TypeError for an unhashable value
    return type(value), repr(value) if isinstance(value, float) else None


def _why(old, new):
    """Why a new program was needed: the first differences between two cache keys."""
    (old_entries, old_n, old_training), (new_entries, new_n, new_training) = old, new
    reasons = [f"training: {old_training} → {new_training}"] if old_training != new_training else []
    for a, b in zip((leaf for entry in old_entries for leaf in entry[2]), (leaf for e in new_entries for leaf in e[2])):
        name = b[1]
        if a[0] == b[0] == "tensor" and len(a[2]) != len(b[2]):
            reasons.append(f"{name} rank: {len(a[2])} → {len(b[2])}")
        elif a[0] == b[0] == "tensor":
            reasons += [f"{name} dim {i}: {x} → {y}" for i, (x, y) in enumerate(zip(a[2], b[2])) if x != y]
        elif a[2:] != b[2:]:
            reasons.append(f"{name}: {_shown(a)} → {_shown(b)}")
        if a[0] == b[0] == "tensor" and a[3] != b[3]:
            reasons.append(f"{name} dtype: {a[3]} → {b[3]}")
    if len(old_entries) != len(new_entries) or old_n != new_n:
        reasons.append(f"number of arguments: {len(old_entries)} → {len(new_entries)}")
    return "; ".join(reasons) or "a new signature"


def _shown(leaf):
    return "a tensor" if leaf[0] == "tensor" else repr(leaf[2])


def to_static(function=None, input_spec=None):
    """Convert a function or Layer to static programs (also a decorator, with or without arguments)."""
    if function is None:
        return lambda fn: StaticFunction(fn, input_spec)
    return StaticFunction(function, input_spec)
