"""backprop_steps follows the pending-count BFS; memory profiles count births, deaths and the peak."""
import numpy as np
import pytest

import tinyflow as tfl

needs_dot = pytest.mark.skipif(not tfl.viz.dot_available(), reason="graphviz's dot is not installed "
                               "(apt-get install graphviz)")


def diamond():
    x, a, b = (tfl.Variable(np.array(v), name=n) for v, n in ((2.0, "x"), (3.0, "a"), (5.0, "b")))
    return tfl.add(x * a * b, x, name="loss"), x, a, b


def test_frames_follow_the_pending_count_order():
    loss, x, a, b = diamond()
    steps = tfl.viz.backprop_steps(loss, [x, a, b])
    # x is consumed twice: it is taken only after both the `+` and the product delivered
    assert steps.order == ["loss", "Multiply_1", "Multiply", "b", "x", "a"]
    assert len(steps) == 6
    before_x = steps[3].source  # b was just taken; x waits with both contributions in
    assert "pending 0" in before_x and "received 1 + 15" in before_x
    assert "grad = 16" in steps[4].source  # then x: 1 + 3·5
    assert "took 'x' from the queue" in steps[4].source


def test_frames_without_values_show_counts():
    x = tfl.Placeholder((), "float64", name="x")
    loss = x * x + x
    steps = tfl.viz.backprop_steps(loss, [x])
    assert steps.order[-1] == "x" and "pending" in steps[0].source and "value" not in steps[0].source


@needs_dot
def test_frames_save_as_pngs_gif_and_html(tmp_path):
    loss, x, a, b = diamond()
    steps = tfl.viz.backprop_steps(loss, [x, a, b])
    paths = steps.save_frames(tmp_path / "frames")
    assert [p.rsplit("/", 1)[-1] for p in paths] == [f"frame_{i:03d}.png" for i in range(6)]
    from PIL import Image
    gif = Image.open(steps.save_gif(tmp_path / "steps.gif"))
    assert gif.n_frames == 6
    page = open(steps.save_html(tmp_path / "steps.html"), encoding="utf-8").read()
    assert page.count("data:image/svg+xml;base64") == 6 and "Next" in page


def test_values_and_gradients_are_summarised_after_a_run_and_scopes_collapse():
    x = tfl.Placeholder((None, 2), name="x")
    with tfl.name_scope("layer"):
        w = tfl.Variable(np.array([[1.0], [2.0]], np.float32), name="w")
        y = tfl.matmul(x, w)
    loss = tfl.reduce_sum(y, name="loss")
    train = tfl.optim.SGD(0.1).minimize(loss)
    source = tfl.viz.to_graphviz(train, show_values=True, feed_dict={x: [[1.0, 1.0]]}).source
    assert "loss\\n3" in source  # the loss value, exactly
    assert "grad [2, 1] mean 1" in source  # w's gradient summarised on w
    assert w.value[1, 0] == 2.0  # drawing never runs the optimizer
    collapsed = tfl.viz.to_graphviz(train, collapse=["gradients", "SGD"]).source
    assert "scope_gradients" in collapsed and "SumToShapeOf" not in collapsed


def test_memory_profile_tracks_births_deaths_and_the_peak():
    x = tfl.Placeholder((None, 250), name="x")  # 1000 bytes per float32 row
    a = tfl.exp(x, name="a")
    b = tfl.square(a, name="b")
    c = tfl.negative(b, name="c")
    with tfl.Session(optimize=False) as sess:  # the ops as written (optimised, they are one fused kernel)
        profile = sess.memory_profile(c, {x: np.ones((100, 250))})
    rows = {r["node"]: r for r in profile.rows}
    assert profile.fed_bytes == 100_000
    assert rows["a"]["new_bytes"] == 100_000 and rows["a"]["freed_bytes"] == 100_000  # x dies after a
    assert rows["b"]["freed_bytes"] == 100_000  # a dies after b
    assert profile.peak_bytes == 200_000 and "peak" in profile.table()


@needs_dot
def test_memory_plot_writes_a_png(tmp_path):
    x = tfl.Placeholder((None, 10), name="x")
    y = tfl.reduce_sum(tfl.relu(x) * 2.0)
    with tfl.Session() as sess:
        profile = sess.memory_profile(y, {x: np.ones((5, 10))})
    fig = tfl.viz.plot_memory(profile, tmp_path / "memory.png")
    assert (tmp_path / "memory.png").stat().st_size > 5000 and fig.axes
