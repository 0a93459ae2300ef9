"""Without graphviz's `dot`, pictures degrade to their DOT source and a clear message, never a raw traceback."""
import numpy as np
import pytest

import tinyflow as tfl
from tinyflow.viz import VizError



@pytest.fixture
def no_dot(monkeypatch, tmp_path):
    """A PATH on which `dot` cannot be found (as on a machine without graphviz)."""
    monkeypatch.setenv("PATH", str(tmp_path))
    assert not tfl.viz.dot_available()


def small_graph():
    x = tfl.Variable(np.array(2.0), name="x")
    with tfl.name_scope("layer"):
        y = x * x + x
    return x, y


def test_jupyter_shows_the_dot_source_and_says_why(no_dot):
    _, y = small_graph()
    bundle = tfl.viz.to_graphviz(y)._repr_mimebundle_()
    assert set(bundle) == {"text/plain", "text/html"}
    assert "`dot` program is not installed" in bundle["text/plain"]
    assert "apt-get install graphviz" in bundle["text/plain"]
    assert "digraph tinyflow" in bundle["text/plain"] and "cluster_layer" in bundle["text/plain"]
    assert "DOT source" in bundle["text/html"] and "there is no way around it" in bundle["text/html"]


def test_rendering_raises_a_viz_error_naming_graphviz(no_dot, tmp_path):
    _, y = small_graph()
    for draw in (lambda: tfl.viz.render(y, tmp_path / "g.png"), lambda: tfl.viz.to_graphviz(y).pipe(format="svg"),
                 lambda: tfl.viz.to_graphviz(y).render(tmp_path / "g")):
        with pytest.raises(VizError, match="graphviz's `dot` program is not installed"):
            draw()
    assert not (tmp_path / "g.png").exists()
    assert tfl.viz.svg(y) is None and y._repr_svg_() is None  # Jupyter falls back to the node's text


def test_backprop_steps_show_every_frame_as_dot_source(no_dot):
    x, y = small_graph()
    steps = tfl.viz.backprop_steps(y, [x])
    page = steps._repr_html_()
    assert page.count("digraph step") == len(steps) and "`dot` program is not installed" in page
    assert "text/plain" in steps[0]._repr_mimebundle_()
    with pytest.raises(VizError):
        steps.save_frames("unused")


def test_with_dot_the_same_objects_draw_svg():
    if not tfl.viz.dot_available():
        pytest.skip("graphviz's `dot` is not installed (apt-get install graphviz)")
    x, y = small_graph()
    assert set(tfl.viz.to_graphviz(y)._repr_mimebundle_()) == {"image/svg+xml"}
    assert "data:image/svg+xml;base64" in tfl.viz.backprop_steps(y, [x])._repr_html_()
