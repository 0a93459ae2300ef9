"""Layer, the base of every layer, the simple ones (Linear, Sequential, Flatten, Dropout), and the registries of
activations and initializers. A layer creates its Variables when constructed (as in PyTorch) and builds ops each time
it is called on a node (sharing its weights); on an eager Tensor `forward` computes at once, and `train()` / `eval()`
choose how dropout and batch norm behave (graph mode reads the training flag instead)."""
import numpy as np

from ..errors import ArgumentError, ShapeError
from ..graph import get_default_graph
from ..nodes import Operation, Placeholder, Variable, as_node, is_eager
from ..ops.array_ops import checks
from ..ops.elementwise_ops import leaky_relu, relu, sigmoid, softplus, tanh
from ..ops.matmul import matmul
from ..ops.random_ops import dropout
from ..ops.shape_ops import flatten
from ..ops.softmax import log_softmax, softmax
from ..random import generator

_ACTIVATIONS = {"relu": relu, "sigmoid": sigmoid, "tanh": tanh, "leaky_relu": leaky_relu, "softplus": softplus,
                "softmax": softmax, "log_softmax": log_softmax}


def _uniform(bound):
    """The initializer drawing from U(-a, a) with a = bound(fan_in, fan_out)."""
    return lambda shape, fan_in, fan_out, rng: rng.uniform(-bound(fan_in, fan_out), bound(fan_in, fan_out), shape)


def _normal(std):
    """The initializer drawing from N(0, std(fan_in, fan_out)²)."""
    return lambda shape, fan_in, fan_out, rng: rng.normal(0.0, std(fan_in, fan_out), shape)


# name -> fn(shape, fan_in, fan_out, rng) -> array, all drawing from tinyflow's one seed (`tfl.set_seed`)
_INITIALIZERS = {
    "zeros": lambda shape, fan_in, fan_out, rng: np.zeros(shape),
    "ones": lambda shape, fan_in, fan_out, rng: np.ones(shape),
    "normal": _normal(lambda fan_in, fan_out: 0.01),  # the classic small random start
    "uniform": _uniform(lambda fan_in, fan_out: 1.0 / np.sqrt(max(fan_in, 1))),  # torch's Linear and Conv default
    # Glorot, for tanh/sigmoid nets
    "xavier_uniform": _uniform(lambda fan_in, fan_out: np.sqrt(6.0 / max(fan_in + fan_out, 1))),
    "xavier_normal": _normal(lambda fan_in, fan_out: np.sqrt(2.0 / max(fan_in + fan_out, 1))),
    # He/Kaiming, for relu nets
    "he_uniform": _uniform(lambda fan_in, fan_out: np.sqrt(6.0 / max(fan_in, 1))),
    "he_normal": _normal(lambda fan_in, fan_out: np.sqrt(2.0 / max(fan_in, 1))),
}


def _adding_to(table, name):
    """A decorator putting the decorated function into `table` under `name`."""
    def decorate(fn):
        table[name] = fn
        return fn
    return decorate


def _look_up(table, kind, name):
    """table[name], or an ArgumentError listing the registered names and how to register another."""
    if not isinstance(name, str) or name not in table:
        raise ArgumentError(f"unknown {kind} {name!r}; registered {kind}s: {sorted(table)}. Register your own "
                            f"with @tfl.nn.register_{kind}(name).")
    return table[name]


def register_activation(name):
    """Decorator: make `fn(node) -> node` available to layers as `act=name`."""
    return _adding_to(_ACTIVATIONS, name)


def register_initializer(name):
    """Decorator: make `fn(shape, fan_in, fan_out, rng) -> array` selectable by name."""
    return _adding_to(_INITIALIZERS, name)


def registered_activations():
    """The names layers accept as `act`."""
    return sorted(_ACTIVATIONS)


def registered_initializers():
    """The initializer names layers accept."""
    return sorted(_INITIALIZERS)


def get_activation(act):
    """The activation function for a registered name, a callable, or None (identity)."""
    return act if act is None or callable(act) else _look_up(_ACTIVATIONS, "activation", act)


def initial_value(init, shape, fan_in, fan_out, dtype):
    """An initial array from an initializer name or callable, drawn with the next global seed."""
    init = init if callable(init) else _look_up(_INITIALIZERS, "initializer", init)
    return np.asarray(init(tuple(shape), fan_in, fan_out, generator()), dtype=dtype)


def sizes(layer, name, **values):
    """The layer's size arguments as ints, each at least 1 (an ArgumentError naming the layer otherwise)."""
    check = checks(type(layer).__name__, name)
    return [check.integer(argument, value, minimum=1) for argument, value in values.items()]


def flags(layer, name, **values):
    """The layer's bool arguments (an ArgumentError naming the layer otherwise)."""
    check = checks(type(layer).__name__, name)
    return [check.flag(argument, value) for argument, value in values.items()]


def training_flag(graph=None):
    """The graph's boolean `training` placeholder (False unless fed): dropout and batch norm read it."""
    graph = graph if graph is not None else get_default_graph()
    if graph.training_flag is None:
        with graph.name_scope(""):
            graph.training_flag = Placeholder((), "bool", name="training", default=False, graph=graph)
    return graph.training_flag


def update_ops(graph=None):
    """Ops a training step must run besides the optimizer's (batch-norm moving statistics)."""
    return list((graph if graph is not None else get_default_graph()).update_ops)


class Layer:
    """A callable on nodes that owns Variables, created under the layer's name scope."""

    rank = None  # the input rank of a layer class made by `ranked`

    def __init__(self, name=None, dtype="float32"):
        self.dtype = checks(type(self).__name__, name).dtype("dtype", dtype)
        self.graph = get_default_graph()
        with self.graph.name_scope(name or type(self).__name__) as scope:
            self.scope = scope
        self._variables = []
        self.training = True  # eager mode only: dropout and batch norm behave as in training (torch's default)

    def __repr__(self):
        return f"<{type(self).__name__} '{self.scope}'>"

    def __call__(self, x, *state):
        if is_eager(x):  # compute at once; ops on this layer's Variables are eager too
            Operation.eager_variables += 1
            try:
                return self.forward(x, *state)
            finally:
                Operation.eager_variables -= 1
        x = as_node(x)
        with self.graph.name_scope(self.scope + "/"):
            return self.forward(x, *state)

    def sublayers(self):
        """The layers inside this one (Sequential's list)."""
        return []

    def train(self, mode=True):
        """Eager mode: behave as in training (dropout on, batch statistics); returns the layer."""
        self.training = bool(mode)
        for layer in self.sublayers():
            layer.train(mode)
        return self

    def eval(self):
        """Eager mode: behave as in evaluation (no dropout, moving statistics); returns the layer."""
        return self.train(False)

    def zero_grad(self):
        """Forget the gradients eager backward() left in this layer's parameters."""
        for var in self.parameters():
            var.grad = None

    def forward(self, x, *state):
        """Build this layer's ops on node x (and a recurrent layer's initial state) and return the output."""
        raise NotImplementedError

    def add_variable(self, name, shape, init, fan_in=1, fan_out=1, trainable=True):
        """Create a Variable of this layer, initialised by name or callable."""
        with self.graph.name_scope(self.scope + "/"):
            var = Variable(initial_value(init, shape, fan_in, fan_out, self.dtype), trainable=trainable, name=name)
        self._variables.append(var)
        return var

    def check_rank(self, x):
        """ShapeError unless x has the input rank this layer class takes (`rank`)."""
        if x.shape is None or len(x.shape) != self.rank:
            raise ShapeError(f"{type(self).__name__} expects inputs of rank {self.rank}, got shape {x.shape}")

    def parameters(self):
        """The trainable Variables of this layer (and of its sub-layers)."""
        return [v for v in self.variables() if v.trainable]

    def variables(self):
        """Every Variable of this layer, trainable or not."""
        return list(self._variables)


_LAYOUTS = {2: "(N, C)", 3: "(N, C, L)", 4: "(N, C, H, W)", 5: "(N, C, D, H, W)"}


def ranked(base, name, doc, ranks=(3, 4, 5)):
    """Subclasses of `base`, one per input rank (their `rank`), named `name` formatted with the spatial axes."""
    return [type(name.format(max(rank - 2, 1)), (base,), {"rank": rank, "__module__": base.__module__,
                                                          "__doc__": f"{doc} of {_LAYOUTS[rank]} inputs."})
            for rank in ranks]


class Linear(Layer):
    """y = act(x @ W + b) with W of shape (in_features, out_features)."""

    def __init__(self, in_features, out_features, bias=True, act=None, weight_init="uniform", bias_init="zeros",
                 name=None, dtype="float32"):
        self.act = get_activation(act)  # checked first: a bad argument fails before any Variable exists
        in_features, out_features = sizes(self, name, in_features=in_features, out_features=out_features)
        bias, = flags(self, name, bias=bias)
        super().__init__(name, dtype)
        self.in_features, self.out_features = in_features, out_features
        self.weight = self.add_variable("weight", (in_features, out_features), weight_init, in_features, out_features)
        self.bias = self.add_variable("bias", (out_features,), bias_init, in_features, out_features) if bias else None

    def forward(self, x):
        y = matmul(x, self.weight)
        if self.bias is not None:
            y = y + self.bias
        return self.act(y) if self.act else y


class Sequential(Layer):
    """Layers applied one after another."""

    def __init__(self, *layers, name=None):
        super().__init__(name)
        self.layers = list(layers[0]) if len(layers) == 1 and isinstance(layers[0], (list, tuple)) else list(layers)
        for i, layer in enumerate(self.layers):
            if not callable(layer):
                checks("Sequential", name).fail(f"layers[{i}]", layer, "is not a layer", "pass layers or functions "
                                                "of one node, e.g. tfl.nn.Sequential(tfl.nn.Linear(4, 8), tfl.relu)")

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x

    def variables(self):
        return [v for layer in self.sublayers() for v in layer.variables()]

    def sublayers(self):
        return [layer for layer in self.layers if isinstance(layer, Layer)]


class Flatten(Layer):
    """(N, d1, d2, ...) -> (N, d1·d2·...)."""

    def forward(self, x):
        return flatten(x, 1)


class Dropout(Layer):
    """Zero each entry with probability p while training (the graph's training flag), scale the rest."""

    def __init__(self, p=0.5, name=None):
        self.p = checks("Dropout", name).number("p", p, 0.0, 1.0, high_open=True)
        super().__init__(name)

    def forward(self, x):
        return dropout(x, self.p, training=self.training if is_eager(x) else training_flag(self.graph))
