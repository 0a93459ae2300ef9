"""Graph pictures: kinds, legend, clusters, pruning, determinism, render and the missing-dot error."""
import numpy as np
import pytest

import tinyflow as tfl
from tinyflow.viz import VizError


def small_training_graph():
    x = tfl.Placeholder((None, 3), name="x")
    with tfl.name_scope("layer1"):
        w = tfl.Variable(np.zeros((3, 1)), name="w")
        y = tfl.matmul(x, w)
    loss = tfl.reduce_mean(tfl.square(y), name="loss")
    train = tfl.optim.Adam(0.1).minimize(loss)
    return x, w, loss, train


def test_every_kind_is_drawn_with_a_legend_and_scopes_are_clusters():
    x, w, loss, train = small_training_graph()
    source = tfl.viz.to_graphviz().source
    assert "cluster_layer1" in source and "cluster_gradients" in source and "cluster_Adam" in source
    for text in ("Placeholder (fed data)", "Variable (trained)", "Variable (state", "gradient op",
                 "optimizer update", "legend"):
        assert text in source
    assert 'label="(None, 3)"' in source  # static shapes on edges


def test_target_prunes_to_what_it_needs_and_gradients_can_be_hidden():
    x, w, loss, train = small_training_graph()
    forward = tfl.viz.to_graphviz(loss).source
    assert "ApplyAdam" not in forward and "gradients" not in forward
    no_grads = tfl.viz.to_graphviz(train, show_gradients=False).source
    assert "cluster_gradients" not in no_grads and "ApplyAdam" not in no_grads


def test_same_graph_same_dot_text():
    small_training_graph()
    assert tfl.viz.to_graphviz().source == tfl.viz.to_graphviz().source


def test_show_values_summarises_variables():
    v = tfl.Variable(np.arange(6.0).reshape(2, 3), name="v")
    s = tfl.Variable(np.array(2.5), name="s")
    source = tfl.viz.to_graphviz(v + s, show_values=True).source
    assert "2.5" in source and "[2, 3] mean 2.5" in source


@pytest.mark.skipif(not tfl.viz.dot_available(), reason="graphviz's dot is not installed (apt-get install graphviz)")
@pytest.mark.parametrize("suffix, magic", [(".png", b"\x89PNG"), (".svg", b"<?xml"), (".pdf", b"%PDF")])
def test_render_by_suffix(tmp_path, suffix, magic):
    _, _, loss, _ = small_training_graph()
    path = tfl.viz.render(loss, tmp_path / f"g{suffix}")
    assert open(path, "rb").read()[:len(magic)] == magic
    assert tfl.get_default_graph()._repr_svg_().startswith("<?xml") and loss._repr_svg_()


def png_size(path):
    """(width, height) from a PNG file's header."""
    header = open(path, "rb").read(24)
    return int.from_bytes(header[16:20], "big"), int.from_bytes(header[20:24], "big")


@pytest.mark.skipif(not tfl.viz.dot_available(), reason="graphviz's dot is not installed (apt-get install graphviz)")
def test_a_big_graphs_png_is_scaled_down_to_a_screens_size_and_a_small_one_is_not(tmp_path):
    x = tfl.Placeholder((None, 8), name="x")
    h = x
    for i in range(120):  # a deep network's picture: a full-size PNG would be about 30,000 pixels tall
        with tfl.name_scope(f"layer{i}"):
            h = tfl.relu(h * 1.5)
    big = png_size(tfl.viz.render(h, tmp_path / "big.png"))
    assert max(big) == 3840, big  # a 4K screen's width
    y = tfl.relu(x)
    small = png_size(tfl.viz.render(y, tmp_path / "small.png"))
    natural = tmp_path / "natural.png"
    natural.write_bytes(tfl.viz.to_graphviz(y).pipe(format="png"))
    assert small == png_size(natural) and max(small) < 1000


def test_missing_dot_is_a_clear_error(tmp_path, monkeypatch):
    _, _, loss, _ = small_training_graph()
    monkeypatch.setattr("shutil.which", lambda name: None)
    with pytest.raises(VizError, match="apt-get install graphviz"):
        tfl.viz.render(loss, tmp_path / "g.png")
    assert not (tmp_path / "g.png").exists()
    with pytest.raises(VizError, match=r"\.png, \.svg or \.pdf"):
        tfl.viz.render(loss, tmp_path / "g.gif")
