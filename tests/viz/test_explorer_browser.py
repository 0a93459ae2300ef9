"""The explorer page in headless Chromium: clicking, stepping, scopes, plans, eager tensors, hostile names, 10,000 nodes.

Each test saves a screenshot into the artefact folder (see tests/browser.py).
"""
import time

import numpy as np
import pytest

import browser
import tinyflow as tfl


pytestmark = pytest.mark.usefixtures("chromium")


def open_page(driver, path):
    browser.goto(driver, f"file://{path}")
    browser.wait_for(lambda: driver.execute_script("return document.body.getAttribute('data-ready')"),
                     what="the explorer page to render")


def css(driver, selector):
    from selenium.webdriver.common.by import By
    return driver.find_element(By.CSS_SELECTOR, selector)


def panel_number(driver, key):
    return float(css(driver, f'#panel [data-field="{key}"]').get_attribute("data-raw"))


def press(driver, key, times=1):
    from selenium.webdriver.common.keys import Keys
    body = css(driver, "body")
    for _ in range(times):
        body.send_keys(getattr(Keys, key))


def status(driver):
    element = css(driver, "#step-status")
    return element.get_attribute("data-phase"), element.get_attribute("data-node")


def test_clicking_a_node_shows_what_session_run_computes(chromium, tmp_path):
    x = tfl.Placeholder((None, 3), name="x")
    with tfl.name_scope("dense"):
        w = tfl.Variable(np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4), name="w")
        z = tfl.matmul(x, w)
        h = tfl.relu(z)
    loss = tfl.reduce_mean(tfl.square(h), name="loss")
    X = np.arange(15, dtype=np.float32).reshape(5, 3) / 7 - 1
    page = tfl.viz.explore(loss, {x: X}, path=tmp_path / "dense.html")
    with tfl.Session() as sess:
        z_value, z_grad = sess.run([z, tfl.gradients(loss, [z])[0]], {x: X})
    open_page(chromium, page.path)
    css(chromium, '.node[data-name="dense/MatMul"]').click()
    assert css(chromium, '#panel [data-field="name"]').text == "dense/MatMul"
    assert css(chromium, '#panel [data-field="op"]').text == "MatMul"
    assert css(chromium, '#panel [data-field="shape"]').text == "(None, 4)"
    assert css(chromium, '#panel [data-field="dtype"]').text == "float32"
    assert "test_explorer_browser.py:" in css(chromium, '#panel [data-field="site"]').text
    for stat in ("mean", "std", "min", "max"):
        assert panel_number(chromium, f"value.{stat}") == pytest.approx(float(getattr(z_value, stat)()), rel=1e-5)
        assert panel_number(chromium, f"grad.{stat}") == pytest.approx(float(getattr(z_grad, stat)()), rel=1e-5, abs=1e-9)
    cells = chromium.find_elements("css selector", '#panel [data-field="value.heatmap"] rect')
    assert np.allclose(np.array([float(c.get_attribute("data-v")) for c in cells]).reshape(5, 4), z_value, rtol=1e-6)
    browser.screenshot(chromium, "explorer_node_panel")
    assert not browser.severe_console_errors(chromium)


def test_the_step_through_walks_forward_in_the_sessions_order_then_backprop_in_the_engines(chromium, tmp_path):
    x, a, b = (tfl.Variable(np.array(v), name=n) for v, n in ((2.0, "x"), (3.0, "a"), (5.0, "b")))
    loss = tfl.add(x * a * b, x, name="loss")  # x is read twice: it waits for both consumers
    page = tfl.viz.explore(loss, path=tmp_path / "diamond.html")
    engine = []
    tfl.gradients(loss, [x, a, b], trace=lambda step: engine.append(step["node"].name))
    from tinyflow.session.plan import prune, schedule
    session_order = [n.name for n in schedule(prune([loss], frozenset()), frozenset())]
    open_page(chromium, page.path)
    seen = []
    for _ in range(len(session_order) + len(engine)):
        press(chromium, "ARROW_RIGHT")
        seen.append(status(chromium))
        if seen[-1] == ("backprop", "Multiply_1"):  # x has the `+`'s 1, still waits for x*a's 15
            x_box = css(chromium, '.node[data-name="x"]')
            assert "partial" in x_box.get_attribute("class") and x_box.text.endswith("pending 1")
            browser.screenshot(chromium, "explorer_backprop_x_waits")
    assert seen == [("forward", n) for n in session_order] + [("backprop", n) for n in engine]
    press(chromium, "ARROW_LEFT", len(engine) - engine.index("x") - 1)  # back to the step that takes x
    assert status(chromium) == ("backprop", "x")
    parts = css(chromium, '#panel [data-field="step.parts"]').text
    assert parts == "received 2: 1 + 15" and panel_number(chromium, "step.sum") == 16.0
    assert css(chromium, '#panel [data-field="grad.value"]').text == "16"
    css(chromium, "#step-first").click()
    assert status(chromium) == ("forward", session_order[0])
    assert not browser.severe_console_errors(chromium)


def test_name_scopes_open_and_close(chromium, tmp_path):
    h = tfl.Placeholder((None, 2), name="x")
    for layer in range(3):
        with tfl.name_scope(f"layer{layer}"):
            for _ in range(30):  # 3 x 90 nodes: a graph big enough to start closed
                h = tfl.tanh(h + 1.0)
    page = tfl.viz.explore(tfl.reduce_sum(h), path=tmp_path / "scopes.html")
    open_page(chromium, page.path)
    assert not chromium.find_elements("css selector", '.node[data-name^="layer1/"]')
    css(chromium, '.scope[data-scope="layer1"]').click()
    assert len(chromium.find_elements("css selector", '.node[data-name^="layer1/"]')) == 90
    browser.screenshot(chromium, "explorer_scope_open")
    css(chromium, '.cluster[data-scope="layer1"] .label').click()
    assert not chromium.find_elements("css selector", '.node[data-name^="layer1/"]')
    assert chromium.find_elements("css selector", '.scope[data-scope="layer1"]')


def test_an_optimised_plan_shows_its_fused_kernels_and_an_eager_tensor_its_ops(chromium, tmp_path):
    x = tfl.Placeholder((None, 4), name="x")
    y = tfl.reduce_sum(tfl.relu(x * 2.0 + 1.0) * 3.0, name="y")
    with tfl.Session() as sess:
        plan = sess.plan([y], [x])
    page = tfl.viz.explore(plan, {x: np.ones((2, 4), np.float32)}, path=tmp_path / "plan.html")
    open_page(chromium, page.path)
    label = css(chromium, ".cluster.fused .label").text
    assert label.startswith("\u25be fused kernel: ") and "Relu" in label
    css(chromium, '.node[data-name="Relu"]').click()
    assert css(chromium, '#panel [data-field="kind"]').text == "op"
    assert panel_number(chromium, "value.mean") == 3.0
    browser.screenshot(chromium, "explorer_optimised_plan")
    t = tfl.tensor(np.array([1.0, -2.0], np.float32), requires_grad=True)
    page = tfl.viz.explore((tfl.relu(t) * t).sum(), path=tmp_path / "eager.html")
    open_page(chromium, page.path)
    css(chromium, '.node[data-name="leaf"]').click()
    assert css(chromium, '#panel [data-field="grad.max"]').text == "2"  # d/dt relu(t)*t = 2t for t > 0, 0 below
    press(chromium, "END")
    assert status(chromium) == ("backprop", page.data["backprop_order"][-1])
    assert not browser.severe_console_errors(chromium)


def test_hostile_names_are_shown_as_text_and_never_run(chromium, tmp_path):
    evil = '<img src=x onerror="window.pwned=1"></script><script>window.pwned=2</script>'
    v = tfl.Variable(np.array([[np.nan, 1.0], [np.inf, -1e308]]), name=evil)
    page = tfl.viz.explore(v * 1.0, path=tmp_path / "evil.html", title=evil)
    open_page(chromium, page.path)
    assert chromium.execute_script("return window.pwned") is None
    assert chromium.title == evil and css(chromium, "#title").text.startswith(evil)
    node = chromium.find_element("css selector", ".node.kind-variable")
    assert node.get_attribute("data-name") == evil
    node.click()
    assert css(chromium, '#panel [data-field="name"]').text == evil
    assert css(chromium, '#panel [data-field="value.nan"]').text == "1"
    assert css(chromium, '#panel [data-field="value.min"]').text == "-1e+308"
    assert chromium.execute_script("return window.pwned") is None and not browser.severe_console_errors(chromium)


def test_ten_thousand_nodes_open_in_under_three_seconds(chromium, tmp_path):
    h = tfl.Variable(np.ones(4, np.float32), name="input")
    for block in range(100):
        with tfl.name_scope(f"block{block}"):
            for _ in range(20):
                h = tfl.tanh(h * 0.5 + 0.1)  # five nodes: two constants, three ops
    loss = tfl.reduce_sum(h, name="loss")
    assert len(tfl.get_default_graph().nodes) >= 10_000
    started = time.perf_counter()
    page = tfl.viz.explore(loss, path=tmp_path / "big.html")
    written = time.perf_counter() - started
    started = time.perf_counter()
    open_page(chromium, page.path)
    opened = time.perf_counter() - started
    rendered_ms = chromium.execute_script("return window.tinyflowRenderedAt")  # from the navigation's start
    print(f"10,000 nodes: page written in {written:.2f} s, open and drawn in {opened:.2f} s "
          f"(drawn {rendered_ms:.0f} ms after navigation started)")
    assert opened < 3.0 and rendered_ms < 3000
    assert chromium.execute_script("return window.tinyflowExplorer.state().visible") == 102  # 100 scopes, input, loss
    from selenium.webdriver.common.keys import Keys
    css(chromium, "#search").send_keys("block42/Tanh_5", Keys.ENTER)  # opens its scope and brings it into view
    assert css(chromium, '#panel [data-field="name"]').text == "block42/Tanh_5"
    css(chromium, '.node[data-name="block42/Tanh_4"]').click()
    assert css(chromium, '#panel [data-field="op"]').text == "Tanh"
    browser.screenshot(chromium, "explorer_10000_nodes")


def test_the_page_lays_the_graph_out_without_graphviz_and_the_buttons_step(chromium, tmp_path, monkeypatch):
    """No `dot` on the PATH (a user without root): the page still lays out every node, with the vendored dagre."""
    import shutil
    monkeypatch.setenv("PATH", str(tmp_path))  # the browser and its driver are already running
    assert shutil.which("dot") is None
    a = tfl.Variable(np.array([1.0, 2.0]), name="a")
    loss = tfl.reduce_sum(tfl.tanh(a * 3.0) + a, name="loss")
    page = tfl.viz.explore(loss, path=tmp_path / "no_dot.html")
    open_page(chromium, page.path)
    boxes = chromium.execute_script(
        "return Array.from(document.querySelectorAll('.node')).map(function (e) {"
        "  var r = e.getBoundingClientRect(); return [e.getAttribute('data-name'), r.x, r.y, r.width, r.height]; })")
    assert {b[0] for b in boxes} == {n["name"] for n in page.data["nodes"]}
    assert all(w > 0 and h > 0 for _, _, _, w, h in boxes)
    assert len({(round(x), round(y)) for _, x, y, _, _ in boxes}) == len(boxes)  # no two nodes on one spot
    y = {name: top for name, _, top, _, _ in boxes}
    assert y["a"] != y["loss"]  # ranked: inputs and the loss on different rows
    css(chromium, "#step-next").click()
    css(chromium, "#step-next").click()
    assert status(chromium) == ("forward", page.data["forward_order"][1])
    css(chromium, "#step-prev").click()
    assert status(chromium) == ("forward", page.data["forward_order"][0])
    current = chromium.find_elements("css selector", ".node.current")  # the step's node is highlighted
    assert [e.get_attribute("data-name") for e in current] == [page.data["forward_order"][0]]
    css(chromium, "#step-last").click()
    assert status(chromium) == ("backprop", page.data["backprop_order"][-1])
    browser.screenshot(chromium, "explorer_without_dot")
    assert not browser.severe_console_errors(chromium)
