"""tfl.viz.explore: the page's embedded data against Session.run and the engines' own walks (no browser)."""
import json
import re

import numpy as np
import pytest

import tinyflow as tfl
from tinyflow.viz.backprop_steps import leaf_step



def embedded(path):
    """The page's data, read back as a browser would: the JSON inside the tinyflow-data script element."""
    text = open(path, encoding="utf-8").read()
    match = re.search(r'<script type="application/json" id="tinyflow-data">(.*?)</script>', text, re.S)
    return json.loads(match.group(1)), text


def mlp():
    x = tfl.Placeholder((None, 3), name="x")
    with tfl.name_scope("layer"):
        w = tfl.Variable(np.arange(6, dtype=np.float32).reshape(3, 2) / 10 - 0.2, name="w")
        b = tfl.Variable(np.array([0.1, -0.1], np.float32), name="b")
        h = tfl.tanh(tfl.matmul(x, w) + b)
    loss = tfl.reduce_mean(h * h + h, name="loss")
    return x, w, b, h, loss


def test_the_page_holds_every_node_with_values_and_gradients_from_one_run(tmp_path):
    x, w, b, h, loss = mlp()
    X = np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3)
    page = tfl.viz.explore(loss, {x: X}, path=tmp_path / "g.html")
    data, text = embedded(page.path)
    assert data == json.loads(json.dumps(page.data)) and "dagre.graphlib" in text
    assert not re.search(r"<script[^>]*\bsrc=|<link\b|@import|url\((?!#)", text)  # nothing to fetch: self-contained
    nodes = {n["name"]: n for n in data["nodes"]}
    assert set(nodes) == {"x", "layer/w", "layer/b", "layer/MatMul", "layer/Add", "layer/Tanh", "Multiply", "Add",
                          "loss"}
    for n in data["nodes"]:
        assert set(n) >= {"name", "op", "shape", "dtype", "site", "value", "grad"}
    matmul = nodes["layer/MatMul"]
    assert (matmul["op"], matmul["shape"], matmul["dtype"]) == ("MatMul", [None, 2], "float32")
    assert matmul["site"].endswith(f"test_explorer_data.py:{mlp.__code__.co_firstlineno + 5}")
    grads = tfl.gradients(loss, [h, w])
    with tfl.Session() as sess:
        h_value, gh, gw = sess.run([h, *grads], {x: X})
    value = nodes["layer/Tanh"]["value"]
    assert value["shape"] == [4, 2] and np.isclose(value["mean"], h_value.mean()) and np.isclose(value["max"], h_value.max())
    assert np.allclose(value["heatmap"]["cells"], h_value)  # small enough to show every entry
    assert np.isclose(nodes["layer/Tanh"]["grad"]["mean"], gh.mean()) and np.isclose(nodes["layer/w"]["grad"]["std"], gw.std())
    assert nodes["loss"]["value"]["value"] == pytest.approx(float(np.mean(h_value ** 2 + h_value)))
    assert nodes["x"]["grad"] is not None and all(n["grad"] is None for n in data["nodes"] if n["op"] == "Constant")


def test_the_step_through_follows_the_sessions_order_and_the_engines_walk(tmp_path):
    x, w, b, h, loss = mlp()
    data = tfl.viz.explore(loss, {x: np.ones((2, 3), np.float32)}, path=tmp_path / "g.html").data
    records = []
    tfl.gradients(loss, [x, w, b], trace=lambda step: records.append(
        (step["node"].name, {n.name: c for n, c in step["pending"].items()})))
    assert data["backprop_order"] == [name for name, _ in records]
    # the page replays the counts: before the walk, then minus one per delivered contribution
    pending = dict(data["backprop"]["pending"])
    for step, (name, engine_counts) in zip(data["backprop"]["steps"], records):
        for target, _, _ in step["delivered"]:
            pending[target] -= 1
        assert {n: c for n, c in pending.items() if n in engine_counts} == engine_counts
    from tinyflow.session.plan import prune, schedule
    order = schedule(prune([loss], frozenset([x])), frozenset([x]))
    assert data["forward_order"] == [n.name for n in order]
    tanh = data["backprop"]["pending"]["layer/Tanh"]
    assert tanh == 3  # h * h + h: the Multiply reads it twice, the Add once
    sums = [d for s in data["backprop"]["steps"] for d in s["delivered"] if d[0] == "layer/Tanh"]
    assert len(sums) == 3 and sums[-1][2]["mean"] == pytest.approx(
        next(n for n in data["nodes"] if n["name"] == "layer/Tanh")["grad"]["mean"], rel=1e-6)


def test_exploring_leaves_the_graph_as_it_was_even_when_finalized(tmp_path):
    x, w, b, h, loss = mlp()
    graph = tfl.get_default_graph()
    before = [(n.name, [c.name for c in n.consumers]) for n in graph.nodes]
    graph.finalize()
    tfl.viz.explore(loss, {x: np.ones((2, 3), np.float32)}, path=tmp_path / "g.html")
    assert [(n.name, [c.name for c in n.consumers]) for n in graph.nodes] == before and graph.finalized
    with pytest.raises(tfl.GraphError):
        tfl.gradients(loss, [w])
    with pytest.raises(tfl.GraphError, match="no node named"):
        graph.get_node("gradients/loss_grad/OnesLike")


def test_without_a_feed_the_page_says_which_placeholder_needs_one(tmp_path):
    x, w, b, h, loss = mlp()
    data = tfl.viz.explore(loss, path=tmp_path / "g.html").data
    assert all(n["value"] is None for n in data["nodes"])  # one run computes them all, and it cannot run
    assert any("Placeholder 'x'" in note for note in data["notes"])
    assert data["backprop_order"][0] == "loss"  # the walk needs no values


def test_hostile_names_and_values_cannot_break_out_of_the_page(tmp_path):
    evil = "</script><script>window.pwned=1</script><!--"
    a = tfl.Variable(np.array([[np.nan, np.inf], [-np.inf, 1e308]]), name=evil)
    page = tfl.viz.explore(a * 2.0, path=tmp_path / "evil.html")
    data, text = embedded(page.path)
    assert evil not in text and text.count("</script>") == 3  # the data, dagre and the explorer's own script
    node = next(n for n in data["nodes"] if n["name"] == evil)
    assert node["value"]["nan"] == 1 and node["value"]["inf"] == 2
    assert node["value"]["heatmap"]["cells"] == [["NaN", "Infinity"], ["-Infinity", 1e308]]
    product = next(n for n in data["nodes"] if n["op"] == "Multiply")["value"]
    assert (product["nan"], product["inf"], product["mean"]) == (1, 3, "NaN")  # 1e308 * 2 overflows: no finite entry


def test_big_values_are_averaged_into_a_small_heat_map():
    from tinyflow.viz.explorer.data import HEATMAP_CELLS, summary
    value = np.arange(100 * 70, dtype=np.float64).reshape(100, 70)
    heat = summary(value)["heatmap"]
    cells = np.array(heat["cells"])
    assert (heat["rows"], heat["cols"]) == (100, 70) and cells.shape == (HEATMAP_CELLS, HEATMAP_CELLS)
    assert cells.mean() == pytest.approx(value.mean(), rel=0.02) and cells[0, 0] == pytest.approx(value[:3, :2].mean())
    assert summary(np.zeros((0, 3)))["size"] == 0 and "mean" not in summary(np.array(["a"]))


def test_an_optimised_plan_shows_fused_kernels_as_groups_with_the_users_values(tmp_path):
    x, w, b, h, loss = mlp()
    X = np.ones((2, 3), np.float32)
    with tfl.Session() as sess:
        plan = sess.plan([loss], [x])
        assert plan.optimized is not None
        data = tfl.viz.explore(plan, {x: X}, path=tmp_path / "plan.html").data
        expected = sess.run(h, {x: X})
    fused = {g: info for g, info in data["groups"].items() if info["kind"] == "fused"}
    assert fused and all(info["label"].startswith("fused kernel: ") for info in fused.values())
    members = [n for n in data["nodes"] if n["scope"] in fused]
    assert {"Add", "Tanh"} <= {n["op"] for n in members}
    tanh = next(n for n in members if n["op"] == "Tanh")
    assert np.isclose(tanh["value"]["mean"], expected.mean())  # a fused kernel's member: its user's node's value
    assert data["backprop_order"] == [] and data["forward_order"][0] == "x"
    assert set(data["forward_order"]) == {n["name"] for n in data["nodes"]}


def test_a_training_plans_multi_tensor_update_is_drawn_as_one_node(tmp_path):
    x, w, b, h, loss = mlp()
    train = tfl.optim.SGD(0.1).minimize(loss)
    X = np.ones((2, 3), np.float32)
    with tfl.Session() as sess:
        sess.run([loss, train], {x: X})
        plan = sess.plan([loss, train], [x])
        assert any(s.node.op_type == "MultiTensorUpdate" for s in plan.steps)
        data = tfl.viz.explore(plan, {x: X}, path=tmp_path / "train_plan.html").data
        pytest.importorskip("graphviz", reason="the graphviz Python package is not installed (pip install graphviz)")
        source = tfl.viz.to_graphviz(plan).source
    assert "MultiTensorUpdate" in {n["op"] for n in data["nodes"]} and "MultiTensorUpdate" in source
    assert len(data["forward_order"]) == len(data["nodes"])


def test_an_eager_tensor_shows_its_recorded_ops_and_the_eager_walk(tmp_path):
    t = tfl.tensor(np.array([[1.0, 2.0], [3.0, 4.0]], np.float32), requires_grad=True)
    y = (t * t + t).sum()
    data = tfl.viz.explore(y, path=tmp_path / "eager.html").data
    order = []
    from tinyflow.eager.autograd import backward
    backward([y], retain_graph=True, sink={},
             trace=lambda step: order.extend([] if leaf_step(step) else [step["node"].op_type]))
    assert [name.split("_")[0] for name in data["backprop_order"]] == order
    assert t.grad is None  # the page's walk delivers into a private sink
    nodes = {n["name"]: n for n in data["nodes"]}
    assert nodes["leaf"]["grad"]["heatmap"]["cells"] == [[3.0, 5.0], [7.0, 9.0]]  # 2t + 1
    assert nodes["Multiply"]["value"]["max"] == 16.0 and nodes["ReduceSum"]["value"]["value"] == 40.0


def test_bad_arguments_say_what_to_pass(tmp_path):
    x, w, b, h, loss = mlp()
    with pytest.raises(tfl.viz.ExplorerError, match="path="):
        tfl.viz.explore(loss, "graph.html")
    with pytest.raises(tfl.viz.ExplorerError, match="got int"):
        tfl.viz.explore(42)
    with tfl.Graph().as_default():
        other = tfl.Constant(1.0)
    with pytest.raises(tfl.viz.ExplorerError, match="another graph"):
        tfl.viz.explore(loss, path=tmp_path / "g.html", loss=other)


def test_jupyter_shows_the_page_inline_in_a_frame(tmp_path):
    x, w, b, h, loss = mlp()
    page = tfl.viz.explore(loss, path=tmp_path / "g.html")
    shown = page._repr_html_()
    assert shown.startswith("<iframe srcdoc=") and "tinyflow-data" in shown and "<script" not in shown


def test_the_readme_shows_screenshots_of_the_explorer_and_the_board():
    import pathlib
    root = pathlib.Path(__file__).resolve().parents[2]
    readme = (root / "README.md").read_text(encoding="utf-8")
    for picture in ("docs/explorer.png", "docs/board.png"):
        assert re.search(rf"!\[[^\]]+\]\({re.escape(picture)}\)", readme), picture
        data = (root / picture).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000, picture
