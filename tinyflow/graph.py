"""The Graph: every node registers itself here when created, so creation order is a topological order. There is
always a default graph; `with g.as_default():` makes another one the default for a while (nesting allowed)."""
import contextlib
import threading

from .errors import GraphError

# how graphs draw themselves in Jupyter: {"svg": fn(target=None, graph=None) -> SVG text or None}; tinyflow.viz
# fills it (a lower layer never imports a higher one: it leaves a place for it)
PICTURES = {}


class _DefaultGraphs(threading.local):
    def __init__(self):
        self.stack = []  # the `as_default()` graphs of this thread, innermost last


_defaults = _DefaultGraphs()


class Graph:
    """A container of nodes with unique names, name scopes and a creation-ordered node list."""

    def __init__(self):
        self.nodes = []
        self._by_name = {}
        self._used_names = set()   # node names and scope names share one namespace, as in TF
        self._name_counts = {}
        self.current_scope = ""  # the name scope of nodes created now: "" at the top, else e.g. "layer1/"
        self._roles = ["forward"]  # what kind of node is being built: forward, gradient, optimizer
        self.finalized = False  # True once `finalize()` was called
        self.training_flag = None  # the boolean `training` Placeholder, created on demand by tfl.nn.training_flag
        self.update_ops = []  # ops training steps must also run (batch-norm moving statistics)
        self.run_lock = threading.RLock()  # every Session.run of the graph holds it (a run may start another run)

    def __repr__(self):
        return f"<tinyflow.Graph with {len(self.nodes)} nodes>"

    def __len__(self):
        return len(self.nodes)

    def __contains__(self, node):
        """True for a node registered in this graph and not taken out again (`scratch`, `discard`)."""
        return self._by_name.get(getattr(node, "name", None)) is node

    def _repr_svg_(self):
        """Jupyter shows a graph as its picture (None, so the text repr, without graphviz's dot)."""
        draw = PICTURES.get("svg")
        return None if draw is None else draw(graph=self)

    @contextlib.contextmanager
    def as_default(self):
        """Make this graph the default one inside a `with` block."""
        _defaults.stack.append(self)
        try:
            yield self
        finally:
            _defaults.stack.pop()

    @contextlib.contextmanager
    def name_scope(self, name):
        """Prefix the names of nodes created inside with `name/`; yields the scope's full name."""
        previous = self.current_scope
        if not name:
            self.current_scope = ""
        elif name.endswith("/"):  # "scope/" re-enters an existing scope exactly, as in TF
            self.current_scope = name
        else:
            self.current_scope = self._unique(self.current_scope + name) + "/"
        try:
            yield self.current_scope.rstrip("/")
        finally:
            self.current_scope = previous

    @contextlib.contextmanager
    def role(self, role):
        """Mark the nodes created inside as e.g. "gradient" or "optimizer" (pictures use it)."""
        self._roles.append(role)
        try:
            yield
        finally:
            self._roles.pop()

    @property
    def current_role(self):
        """The role given to nodes created right now."""
        return self._roles[-1]

    def get_node(self, name):
        """The node with this exact name; GraphError listing close names if there is none."""
        try:
            return self._by_name[name]
        except KeyError:
            close = [n for n in self._by_name if name.split("/")[-1] in n][:5]
            hint = f" Did you mean one of {close}?" if close else ""
            raise GraphError(f"no node named '{name}' in {self!r}.{hint}") from None

    @contextlib.contextmanager
    def scratch(self):
        """Remove the nodes built inside the block again at its end (temporary nodes, e.g. the explorer's gradients)."""
        start, updates = len(self.nodes), list(self.update_ops)
        saved = dict(_used_names=set(self._used_names), _name_counts=dict(self._name_counts),
                     _roles=list(self._roles), current_scope=self.current_scope,
                     training_flag=self.training_flag, finalized=self.finalized)
        self.finalized = False  # the net change is nil, so even a finalized graph allows it
        try:
            yield self
        finally:
            self.discard(self.nodes[start:])
            vars(self).update(saved)  # the attributes as they were
            self.update_ops[:] = updates

    def finalize(self):
        """Forbid adding nodes from now on (catches ops accidentally built inside a training loop)."""
        self.finalized = True

    def variables(self, trainable_only=False):
        """The Variables of this graph in creation order."""
        from .nodes.node import Variable
        return [n for n in self.nodes if isinstance(n, Variable) and (n.trainable or not trainable_only)]

    def discard(self, nodes):
        """Take `nodes` (read by no node left) out of the graph and free their names (a dropped to_static program)."""
        gone = set(nodes)
        for reader in {inp for node in gone for inp in node.inputs} - gone:
            reader.consumers[:] = [c for c in reader.consumers if c not in gone]
        self.nodes[:] = [n for n in self.nodes if n not in gone]
        for index, node in enumerate(self.nodes):
            node.creation_index = index  # still a topological order for the nodes built next
        self.update_ops[:] = [n for n in self.update_ops if n not in gone]
        for node in gone:  # their names, and the scopes only they used, are free for new nodes to take
            self._by_name.pop(node.name, None)
        self._used_names -= _scopes(n.name for n in gone) - _scopes(self._by_name)
        self._name_counts = {k: v for k, v in self._name_counts.items() if k in self._used_names}

    def register(self, node, name):
        """Register a new node and return its unique, scoped name."""
        if self.finalized:
            raise GraphError(
                f"cannot add {node.op_type} node (created at {node.creation_site}): the graph is finalized. "
                "Build every op before the training loop and only call sess.run inside it.")
        full = self._unique(self.current_scope + (name or node.op_type))
        self.nodes.append(node)
        self._by_name[full] = node
        return full

    def _unique(self, name):
        """`name` if it is free, else `name_1`, `name_2`, ... (as TF does)."""
        count = self._name_counts.get(name, 0)
        candidate = name
        while candidate in self._used_names:
            count += 1
            candidate = f"{name}_{count}"
        if candidate != name:
            self._name_counts[name] = count
        self._used_names.add(candidate)
        return candidate


def _scopes(names):
    """The names and every scope above them ("a/b/c": "a", "a/b", "a/b/c")."""
    return {n.rsplit("/", k)[0] for n in names for k in range(n.count("/") + 1)}


_global_default = [Graph()]


def get_default_graph():
    """The graph new nodes go into: the innermost `as_default()` graph, else the global one."""
    return _defaults.stack[-1] if _defaults.stack else _global_default[0]


def reset_default_graph():
    """Replace the global default graph with an empty one (not allowed inside `as_default()`)."""
    if _defaults.stack:
        raise GraphError("reset_default_graph() was called inside a `with graph.as_default():` block; "
                         "call it outside every such block.")
    _global_default[0] = Graph()
    return _global_default[0]


def ancestors(nodes, stop=frozenset()):
    """Every node the given nodes depend on (themselves included), not past `stop` (a stack, no recursion)."""
    found, stack = set(), list(nodes)
    while stack:
        node = stack.pop()
        if node not in found:
            found.add(node)
            if node not in stop:
                stack.extend(node.inputs)
    return found


def name_scope(name):
    """`with tfl.name_scope("layer1"):` on the default graph."""
    return get_default_graph().name_scope(name)
