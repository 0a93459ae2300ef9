"""Picture and plot functions take their options by keyword, so a feed or a path in the wrong place is an error."""
import inspect

import numpy as np
import pytest

import tinyflow as tfl


needs_dot = pytest.mark.skipif(not tfl.viz.dot_available(), reason="graphviz's dot is not installed "
                               "(apt-get install graphviz)")


def graph():
    x = tfl.Placeholder((), "float64", name="x")
    w = tfl.Variable(np.array(3.0), name="w")
    return x * w + w, x, w


def test_a_path_in_third_place_is_refused_before_anything_is_drawn(tmp_path):
    loss, x, w = graph()
    with pytest.raises(TypeError, match="positional"):
        tfl.viz.backprop_steps(loss, [w], {x: 2.0}, str(tmp_path / "steps.gif"))
    with pytest.raises(TypeError, match="positional"):
        tfl.viz.backprop_steps(loss, [w], str(tmp_path / "steps.gif"))


def test_the_issue_call_with_a_feed_in_second_place_names_the_mix_up():
    loss, x, w = graph()
    with pytest.raises(tfl.viz.VizError, match="wrt must be the node or list of nodes.*feed_dict="):
        tfl.viz.backprop_steps(loss, {x: 2.0})
    with pytest.raises(tfl.viz.VizError, match="feed_dict must map placeholders to values, got str"):
        tfl.viz.backprop_steps(loss, [w], feed_dict="steps.gif")
    with pytest.raises(tfl.viz.VizError, match="loss must be a node"):
        tfl.viz.backprop_steps("loss", [w])


@needs_dot
@pytest.mark.parametrize("name", ["steps.html", "steps.gif", "frames"])
def test_path_writes_the_pictures(tmp_path, name):
    if name.endswith(".gif"):
        pytest.importorskip("PIL", reason="Pillow is needed for GIFs")
    loss, x, w = graph()
    steps = tfl.viz.backprop_steps(loss, [w], feed_dict={x: 2.0}, path=tmp_path / name)
    target = tmp_path / name
    assert target.exists() and len(steps) >= 2
    if target.is_dir():
        assert len(list(target.iterdir())) == len(steps)


@pytest.mark.parametrize("function, positional", [
    (tfl.viz.backprop_steps, ["loss", "wrt"]), (tfl.viz.to_graphviz, ["target"]), (tfl.viz.svg, ["target"]),
    (tfl.viz.render, ["target", "path"]), (tfl.viz.plot_memory, ["profile", "path"]),
    (tfl.plot.training_curves, ["history", "path"]), (tfl.plot.predicted_vs_actual, ["y_true", "y_pred", "path"]),
    (tfl.plot.confusion_matrix, ["y_true", "y_pred", "path"])])
def test_only_the_data_and_the_path_are_positional(function, positional):
    parameters = inspect.signature(function).parameters.values()
    assert [p.name for p in parameters if p.kind == p.POSITIONAL_OR_KEYWORD] == positional
