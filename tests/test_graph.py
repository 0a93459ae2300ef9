"""The Graph: auto-registration, default-graph stack, names, scopes, finalize, creation sites."""
import numpy as np
import pytest

import tinyflow as tfl


def test_nodes_register_in_creation_order_in_the_default_graph(fresh_graph):
    x = tfl.Placeholder((None, 3), name="x")
    w = tfl.Variable(np.zeros((3, 1)), name="w")
    y = x @ w
    assert fresh_graph.nodes == [x, w, y]
    assert all(n.graph is fresh_graph for n in (x, w, y))
    assert y.inputs == (x, w) and x.consumers == [y] and w.consumers == [y]


def test_nested_as_default_and_reset():
    outer, inner = tfl.Graph(), tfl.Graph()
    with outer.as_default():
        a = tfl.Constant(1.0)
        with inner.as_default():
            b = tfl.Constant(2.0)
            assert tfl.get_default_graph() is inner
        c = tfl.Constant(3.0)
    assert outer.nodes == [a, c] and inner.nodes == [b]
    with outer.as_default(), pytest.raises(tfl.GraphError, match="outside"):
        tfl.reset_default_graph()
    old = tfl.get_default_graph()
    assert tfl.reset_default_graph() is not old and tfl.get_default_graph().nodes == []


def test_automatic_names_are_unique_and_explicit_names_kept(fresh_graph):
    a, b = tfl.Constant(1.0), tfl.Constant(2.0)
    s1, s2 = a + b, a + b
    assert (s1.name, s2.name) == ("Add", "Add_1")
    assert (a.name, b.name) == ("Constant", "Constant_1")
    x = tfl.Placeholder(name="x")
    assert x.name == "x" and fresh_graph.get_node("x") is x
    assert tfl.Placeholder(name="x").name == "x_1"  # a clash is made unique, as in TF


def test_name_scopes_nest_and_prefix_names(fresh_graph):
    with tfl.name_scope("layer1") as scope:
        w = tfl.Variable(np.zeros((2, 2)), name="w")
        with tfl.name_scope("inner"):
            m = tfl.matmul(w, w)
    assert scope == "layer1"
    assert w.name == "layer1/w" and m.name == "layer1/inner/MatMul"
    assert fresh_graph.get_node("layer1/inner/MatMul") is m
    with tfl.name_scope("layer1") as second:
        pass
    assert second == "layer1_1"  # re-entering a scope name makes a new scope
    with tfl.name_scope("layer1/"):  # a trailing slash re-enters it exactly
        assert tfl.Constant(0.0).name == "layer1/Constant"


def test_get_node_unknown_name_suggests_close_names(fresh_graph):
    with tfl.name_scope("layer1"):
        tfl.Variable(np.zeros(2), name="weights")
    with pytest.raises(tfl.GraphError, match="layer1/weights"):
        fresh_graph.get_node("weights")


def test_creation_site_points_at_the_users_line():
    x = tfl.Placeholder((2,)); line = __import__("inspect").currentframe().f_lineno  # noqa: E702
    y = x * 2.0
    assert x.creation_site.endswith(f"test_graph.py:{line}")
    assert y.creation_site.endswith(f"test_graph.py:{line + 1}")


def test_finalized_graph_refuses_new_nodes(fresh_graph):
    x = tfl.Placeholder((2,), name="x")
    fresh_graph.finalize()
    with pytest.raises(tfl.GraphError, match="finalized.*training loop"):
        x + 1.0


def test_nodes_from_different_graphs_cannot_be_combined():
    with tfl.Graph().as_default():
        a = tfl.Constant(1.0)
    with tfl.Graph().as_default(), pytest.raises(tfl.GraphError, match="another graph"):
        tfl.add(a, tfl.Constant(2.0))


def test_graph_lists_variables(fresh_graph):
    w = tfl.Variable(np.zeros(2), name="w")
    s = tfl.Variable(np.zeros(2), trainable=False, name="s")
    assert fresh_graph.variables() == [w, s]
    assert fresh_graph.variables(trainable_only=True) == [w]


def test_scratch_removes_the_nodes_built_inside_and_keeps_the_graph_as_it_was():
    x = tfl.Variable(np.array(2.0), name="x")
    y = tfl.square(x, name="y")
    graph = tfl.get_default_graph()
    before = (list(graph.nodes), list(x.consumers), list(y.consumers))
    graph.finalize()
    with graph.scratch():
        grads = tfl.gradients(y * x, [x])  # builds nodes reading x and y
        with tfl.Session() as sess:
            assert sess.run(grads) == [12.0]
        built = [n.name for n in graph.nodes[len(before[0]):]]
    assert (list(graph.nodes), list(x.consumers), list(y.consumers)) == before and graph.finalized
    assert len(built) > 5
    for name in built:
        with pytest.raises(tfl.GraphError, match="no node named"):
            graph.get_node(name)
    graph.finalized = False
    again = tfl.square(x, name="y")  # names used only inside the block are free again; "y" is still taken
    assert again.name == "y_1" and again.creation_index == len(before[0])
