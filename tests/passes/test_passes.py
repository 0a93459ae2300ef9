"""Each pass on small graphs: what it rewrites, what it must leave alone, and that values do not change."""
import numpy as np
import pytest

import tinyflow as tfl
from tinyflow.passes import (OptGraph, eliminate_common_subexpressions, fold_constants, fuse_elementwise,
                             optimize, prune_dead_nodes, resolve_options, simplify)

from helpers import assert_close, op_types, run_both

X = np.linspace(-2, 2, 12, dtype=np.float32).reshape(3, 4)


def _graph(fetches, fed=()):
    return OptGraph.from_fetches(fetches, frozenset(fed))


def test_constant_folding_replaces_all_constant_ops_and_keeps_the_users_graph():
    x = tfl.Placeholder((3, 4), name="x")
    scale = tfl.exp(tfl.Constant(np.float32(0.0))) * 3.0   # foldable: only constants
    y = x * scale
    nodes_before = list(tfl.get_default_graph().nodes)
    graph, counts = fold_constants(_graph([y], [x]))
    assert counts["folded"] == 2
    assert [n.op_type for n in graph.nodes] == ["Placeholder", "Constant", "Multiply"]
    assert float(graph.nodes[1].value) == 3.0
    assert tfl.get_default_graph().nodes == nodes_before and y.inputs[1] is scale  # user's graph untouched


def test_constant_folding_skips_random_stateful_fetched_and_large_ops(monkeypatch):
    from tinyflow.passes import constant_folding
    big = tfl.Constant(np.ones(100, np.float32))
    mask = tfl.ops.random_ops.DropoutMask(big, 0.5)
    fetched = tfl.square(tfl.Constant(2.0))
    monkeypatch.setattr(constant_folding, "FOLD_LIMIT", 10)
    large = tfl.exp(big)
    graph, counts = fold_constants(_graph([mask, fetched, large]))
    assert counts["folded"] == 0
    assert {"DropoutMask", "Square", "Exp"} <= {n.op_type for n in graph.nodes}


def test_constant_folding_turns_shape_only_ops_of_static_shapes_into_constants():
    x = tfl.Placeholder((3, 4), name="x")
    rows = tfl.Placeholder((None, 4), name="rows")
    loss = tfl.reduce_sum(tfl.square(x))
    seed, zeros, dynamic = tfl.ones_like(loss), tfl.zeros_like(x), tfl.ones_like(rows)
    fetches = [loss * seed, x + zeros, rows * dynamic]
    graph, counts = fold_constants(_graph(fetches, [x, rows]))
    assert counts["folded"] == 2
    types = [node.op_type for node in graph.nodes]
    assert "ZerosLike" not in types and types.count("OnesLike") == 1  # rows' shape is known only at run time
    optimised, plain, _ = run_both(fetches, {x: X, rows: X[:2]})
    assert_close(optimised, plain)


def test_cse_merges_identical_and_commuted_ops_but_not_random_ones():
    x = tfl.Placeholder((3, 4), name="x")
    a, b = x * 2.0, 2.0 * x                        # equal constants merge first, then a and b match
    s1, s2 = tfl.sigmoid(a), tfl.sigmoid(b)
    m1, m2 = tfl.ops.random_ops.DropoutMask(x, 0.5), tfl.ops.random_ops.DropoutMask(x, 0.5)
    y = s1 + s2 + m1 + m2
    graph, counts = eliminate_common_subexpressions(_graph([y], [x]))
    assert counts["merged"] == 3                   # one constant, the multiply, the sigmoid
    types = [n.op_type for n in graph.nodes]
    assert types.count("Sigmoid") == 1 and types.count("DropoutMask") == 2


def test_cse_key_includes_attributes():
    x = tfl.Placeholder((3, 4), name="x")
    y = tfl.reduce_sum(x, axis=0)
    z = tfl.reduce_sum(x, axis=1)
    w = tfl.reduce_sum(x, axis=0)
    graph, counts = eliminate_common_subexpressions(_graph([tfl.reduce_sum(y) + tfl.reduce_sum(z) +
                                                            tfl.reduce_sum(w)], [x]))
    assert counts["merged"] == 2  # w merges with y, then reduce_sum(w) with reduce_sum(y); z stays


def test_simplify_neutral_elements_double_negation_and_reshapes():
    x = tfl.Placeholder((3, 4), name="x")
    y = ((x * 1.0 + 0.0) / 1.0) - 0.0
    y = -(-y)
    y = tfl.reshape(tfl.reshape(y, (4, 3)), (2, 6))
    y = tfl.transpose(tfl.transpose(y, (1, 0)), (1, 0))
    z = tfl.identity(y) * 2.0
    graph, counts = simplify(_graph([z], [x]))
    assert [n.op_type for n in graph.nodes] == ["Placeholder", "Reshape", "Constant", "Multiply"]
    assert graph.nodes[1].inputs[0] is x and graph.nodes[1].target == (2, 6)
    assert counts["simplified"] >= 7


def test_simplify_respects_broadcasting_dtype_and_fetches():
    x = tfl.Placeholder((4,), name="x")
    widened = x * tfl.Constant(np.ones((3, 4), np.float32))   # the ones change the shape: kept
    promoted = x + tfl.Constant(np.zeros((), np.float64))      # float64 result: kept
    fetched = x * 1.0                                          # a fetch stays its own array
    graph, counts = simplify(_graph([widened, promoted, fetched], [x]))
    assert counts["simplified"] == 0


def test_x_minus_x_is_zero_only_when_provably_finite():
    x = tfl.Placeholder((3,), name="x")
    c = tfl.Constant(np.array([1.0, 2.0, 3.0], np.float32))
    inf = tfl.Constant(np.array([np.inf, 1.0, 2.0], np.float32))
    y = (x - x) + (c - c) * x + (inf - inf) * x
    graph, _ = simplify(_graph([y], [x]))
    subtracts = [n for n in graph.nodes if n.op_type == "Subtract"]
    assert len(subtracts) == 2                                  # x - x and inf - inf stay
    with np.errstate(invalid="ignore"):  # inf - inf is NaN: the point of the test
        out, ref, _ = run_both(y, {x: np.array([np.inf, 1, 2], np.float32)})
    assert np.isnan(out[0]) and np.isnan(ref[0])
    assert_close(out, ref)


def test_prune_drops_nodes_other_passes_leave_behind():
    x = tfl.Placeholder((3,), name="x")
    dead = tfl.exp(x)
    y = x + 1.0
    graph = _graph([y, dead], [x])
    graph.fetches = graph.fetches[:1]
    graph, counts = prune_dead_nodes(graph)
    assert counts["pruned"] == 1 and "Exp" not in [n.op_type for n in graph.nodes]


def test_fusion_groups_a_chain_and_stops_at_shared_and_fetched_values():
    x = tfl.Placeholder((3, 4), name="x")
    shared = tfl.sigmoid(x * 2.0)                    # read twice below: a group boundary
    y = tfl.tanh(shared + 1.0) * 3.0
    z = tfl.exp(shared)
    graph, counts = fuse_elementwise(_graph([y, z], [x]))
    fused = [n for n in graph.nodes if n.op_type == "FusedElementwise"]
    assert counts == {"fused_groups": 2, "fused_ops": 5}
    assert sorted([m.op_type for m in f.members] for f in fused) == [["Add", "Tanh", "Multiply"], ["Multiply", "Sigmoid"]]
    assert "Exp" in [n.op_type for n in graph.nodes]   # a group of one is not fused


def test_fusion_leaves_integer_and_mixed_dtype_ops_alone():
    i = tfl.Placeholder((3,), "int32", name="i")
    f = tfl.Placeholder((3,), "float64", name="f")
    y = (i * 2 + 1) * 3
    z = tfl.exp(tfl.cast(f, "float32")) + 1.0
    graph, counts = fuse_elementwise(_graph([y, z], [i, f]))
    assert counts["fused_groups"] == 1   # exp + add in float32 only


def test_passes_are_pure_functions():
    x = tfl.Placeholder((3, 4), name="x")
    y = tfl.sigmoid(x * 1.0 + 2.0) * tfl.exp(tfl.Constant(0.0))
    graph = _graph([y], [x])
    before = [(n, n.inputs) for n in graph.nodes]
    for run_pass in (fold_constants, eliminate_common_subexpressions, simplify, prune_dead_nodes, fuse_elementwise):
        run_pass(graph)
    assert [(n, n.inputs) for n in graph.nodes] == before


def test_pipeline_report_and_switches():
    x = tfl.Placeholder((3, 4), name="x")
    y = tfl.sigmoid(x * tfl.exp(tfl.Constant(0.0)) + 2.0) * 3.0
    graph = optimize([y], {x})
    counts = graph.report.counts()
    assert counts["constant_folding"]["folded"] == 1 and counts["simplify"]["simplified"] == 1
    assert counts["fusion"] == {"fused_groups": 1, "fused_ops": 3}
    assert "ops 5 -> 1" in str(graph.report).replace("optimiser: 5 ops -> 1 ops", "ops 5 -> 1")
    without = optimize([y], {x}, {"fusion": False})
    assert "fusion" not in without.report.counts()
    with pytest.raises(ValueError, match="unknown optimiser pass"):
        resolve_options({"fuse": True})


def test_session_switches(monkeypatch):
    x = tfl.Placeholder((3, 4), name="x")
    y = tfl.sigmoid(x * 2.0 + 1.0)
    assert tfl.Session(optimize=False).optimize is None
    assert tfl.Session(optimize={"fusion": False}).optimize["fusion"] is False
    monkeypatch.setenv("TINYFLOW_OPTIMIZE", "0")
    sess = tfl.Session()
    sess.run(y, {x: X})
    assert sess.plan([y], {x}).report is None and "FusedElementwise" not in op_types(sess.plan([y], {x}))
    monkeypatch.setenv("TINYFLOW_OPTIMIZE", "1")
    sess = tfl.Session()
    sess.run(y, {x: X})
    assert op_types(sess.plan([y], {x})) == ["FusedElementwise"]


def test_fetches_feeds_and_names_are_unchanged():
    x = tfl.Placeholder((3, 4), name="x")
    h = tfl.sigmoid(x * 2.0, name="h")
    y = tfl.tanh(h + 1.0, name="y")
    out, ref, plan = run_both([y, "h"], {"x": X})
    assert_close(out, ref)
    assert [n.name for n in plan.optimized.fetches] == ["y", "h"]
    fed_h = run_both(y, {h: np.zeros((3, 4), np.float32)})     # feeding an intermediate still overrides it
    assert_close(fed_h[0], np.tanh(np.ones((3, 4), np.float32)))


def test_transpose_of_transpose_composes_permutations():
    x = tfl.Placeholder((2, 3, 4), name="x")
    y = tfl.transpose(tfl.transpose(x, (1, 0, 2)), (2, 0, 1)) * 2.0
    graph, counts = simplify(_graph([y], [x]))
    assert counts["simplified"] == 1 and [n.op_type for n in graph.nodes].count("Transpose") == 1
    out, ref, _ = run_both(y, {x: np.arange(24, dtype=np.float32).reshape(2, 3, 4)})
    assert_close(out, ref)


def test_a_fed_node_is_never_rewritten():
    c = tfl.exp(tfl.Constant(np.float32(1.0)), name="c")   # foldable, but fed below
    y = c * 2.0
    out, ref, plan = run_both(y, {c: np.float32(5.0)})
    assert out == ref == 10.0


def test_bad_optimize_options_raise_argument_errors_naming_the_passes():
    with pytest.raises(tfl.ArgumentError, match=r"unknown optimiser pass\(es\) \['fuse'\]; the passes are"):
        tfl.Session(optimize={"fuse": True})
    with pytest.raises(tfl.ArgumentError, match="optimize must be True, False, None or a dict"):
        tfl.Session(optimize="yes")
