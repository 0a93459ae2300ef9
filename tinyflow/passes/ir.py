"""The graph the passes rewrite: a private copy of the pruned subgraph of some fetches (the user's graph is never
touched). Op nodes are shallow copies rewired to each other; leaves and fed nodes stay the user's objects (feeds are
keyed by them, Variables hold state), so consumers are tracked here, never through `node.consumers`."""
import numpy as np

from ..graph import ancestors
from ..nodes import Constant, Node, Placeholder, Variable

# fields of every node, and of the passes' copies; the rest of an op's __dict__ are its attributes (axis, alpha, ...)
NODE_FIELDS = Node.FIELDS | {"original", "members", "program"}


def is_leaf(node):
    """Placeholders, Variables and Constants: kept as the user's objects, never rewritten."""
    return isinstance(node, (Placeholder, Variable, Constant))


def is_pure(node):
    """An op whose output depends only on its input values: not stateful, not random."""
    return not (is_leaf(node) or getattr(node, "stateful", False) or hasattr(node, "rng")
                or type(node).__module__.endswith("random_ops"))


def original(node):
    """The user's node a copy was made from (the node itself for leaves and new nodes)."""
    return getattr(node, "original", node)


def clone(node, inputs):
    """A private copy of op `node` reading `inputs`; the user's node is untouched."""
    new = object.__new__(type(node))  # a shallow copy (copy.copy, minus its generic machinery)
    new.__dict__.update(node.__dict__)
    new.inputs = tuple(inputs)
    new.consumers = []
    new.original = original(node)
    return new


def make_node(cls, inputs, like, shape=None, dtype=None, **attributes):
    """A new node of class `cls` outside every Graph, named and placed like `like` (whose value it replaces)."""
    node = cls.__new__(cls)
    node.__dict__.update(attributes)
    node.graph, node.inputs, node.consumers = like.graph, tuple(inputs), []
    node.shape = like.shape if shape is None else shape
    node.dtype = like.dtype if dtype is None else np.dtype(dtype)
    node.role, node.site, node.name = like.role, like.site, like.name
    node.creation_index = like.creation_index  # keeps creation order a topological order
    node.original = original(like)
    return node


def folded_constant(value, like):
    """A Constant holding `value`, standing for node `like` (same name and creation site)."""
    value = np.array(value, dtype=like.dtype)
    value.flags.writeable = False
    return make_node(Constant, (), like, shape=value.shape, value=value)


def scalar_constant(node, like):
    """The float value of `node` if it is a one-value Constant of `like`'s dtype not raising its rank."""
    if isinstance(node, Constant) and node.value.size == 1 and node.dtype == like.dtype \
            and node.value.ndim <= len(like.shape or ()):
        return float(node.value.reshape(()))
    return None


def broadcasts_into(shape, target):
    """Whether static `shape` broadcasts to `target` without widening it, for certain (a mask, a constant)."""
    target = target or ()
    return shape is not None and len(shape) <= len(target) and all(
        m == 1 or m == t is not None for m, t in zip(shape[::-1], target[::-1]))


def attribute_key(node):
    """A hashable summary of an op's attributes (axis, alpha, target shape, ...) for CSE."""
    return tuple(sorted((k, _freeze(v)) for k, v in vars(node).items() if k not in NODE_FIELDS))


def _freeze(value):
    if isinstance(value, np.ndarray):
        return ("ndarray", value.dtype.str, value.shape, value.tobytes())
    if isinstance(value, np.generic):
        return ("scalar", value.dtype.str, value.item())
    if isinstance(value, (list, tuple)):
        return (type(value).__name__,) + tuple(_freeze(v) for v in value)
    if isinstance(value, dict):
        return ("dict",) + tuple(sorted((repr(k), _freeze(v)) for k, v in value.items()))
    if isinstance(value, slice):
        return ("slice", value.start, value.stop, value.step)
    try:
        hash(value)
        return value
    except TypeError:
        return ("repr", repr(value))


class OptGraph:
    """Nodes in a topological order, the fetches (positionally like the user's) and the fed nodes."""

    def __init__(self, nodes, fetches, fed):
        self.nodes, self.fetches, self.fed = list(nodes), list(fetches), frozenset(fed)

    @classmethod
    def from_fetches(cls, fetches, fed):
        """The pruned subgraph of `fetches` (stopping at fed nodes), with private copies of its ops."""
        return cls(_reachable(fetches, fed), fetches, fed).copy()

    def copy(self):
        """A copy whose op nodes are new objects (leaves and fed nodes are shared)."""
        mapping = {}
        for node in self.nodes:
            shared = is_leaf(node) or node in self.fed
            mapping[node] = node if shared else clone(node, [mapping[i] for i in node.inputs])
        return OptGraph([mapping[n] for n in self.nodes], [mapping[f] for f in self.fetches], self.fed)

    def consumers(self):
        """node -> the nodes of this graph reading it (once per input slot)."""
        found = {node: [] for node in self.nodes}
        for node in self.nodes:
            if node not in self.fed:
                for inp in node.inputs:
                    found[inp].append(node)
        return found

    def is_fetched(self, node):
        return any(node is f for f in self.fetches)

    def only_read_by(self, node, reader, consumers):
        """Whether only `reader` reads `node` (`consumers`: this graph's), neither fed nor fetched."""
        return node not in self.fed and consumers[node] == [reader] and not self.is_fetched(node)

    def rewrite(self, rule, fresh=False):
        """One sweep in order, inputs already rewritten: `rule(node)` returns its replacement or None; returns how
        many were replaced. A fetch is replaced only by a freshly computed value (`fresh`): it stays its own array."""
        fetched, existing = {id(f) for f in self.fetches}, {id(n) for n in self.nodes}
        mapping, order, placed, replaced = {}, [], set(), 0

        def place(new):  # a new node, after the new nodes it reads (a rule may build several), rewired too
            if id(new) not in placed and id(new) not in existing:
                for inp in new.inputs:
                    place(inp)
                new.inputs = tuple(mapping.get(i, i) for i in new.inputs)
                order.append(new)
                placed.add(id(new))
        for node in self.nodes:
            if not is_leaf(node) and node not in self.fed:
                node.inputs = tuple(mapping.get(i, i) for i in node.inputs)
            new = None if node in self.fed else rule(node)  # a fed node's value comes from the feed
            if new is not None and new is not node and (fresh or id(node) not in fetched):
                place(new)
                mapping[node] = new
                replaced += 1
            order.append(node)
            placed.add(id(node))
        self.fetches = [mapping.get(f, f) for f in self.fetches]
        self.nodes = order
        self.prune()
        return replaced

    def prune(self):
        """Drop the nodes no fetch needs any more; returns how many were dropped."""
        before = len(self.nodes)
        keep = set(_reachable(self.fetches, self.fed))
        self.nodes = [n for n in self.nodes if n in keep]
        return before - len(self.nodes)

    def op_count(self):
        """How many nodes compute something (not leaves or fed nodes)."""
        return sum(1 for n in self.nodes if not is_leaf(n) and n not in self.fed)

    def __repr__(self):
        return f"<tinyflow OptGraph {len(self.nodes)} nodes, {len(self.fetches)} fetches>"


def _reachable(fetches, fed):
    """The nodes `fetches` need, in creation (= topological) order; fed nodes are not walked past."""
    return sorted(ancestors(fetches, stop=fed), key=lambda n: (n.creation_index, id(n)))
