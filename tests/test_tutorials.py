"""Every tutorial notebook runs top to bottom (its own asserts and exercise checks included) and shows pictures.

Each notebook is executed once per test session; the checks below read its outputs. Without graphviz's
`dot`, only the graph-picture check is skipped (saying so): the notebooks must still run, show the DOT
source with a clear message instead of a traceback, and show their matplotlib plots.
"""
import os
import pathlib
import re
import tempfile

import pytest

nbformat = pytest.importorskip("nbformat", reason="nbformat is not installed (pip install -e '.[dev]')")
nbclient = pytest.importorskip("nbclient", reason="nbclient is not installed (pip install -e '.[dev]')")

import tinyflow as tfl  # noqa: E402

TUTORIALS = pathlib.Path(__file__).resolve().parent.parent / "tutorials"
NOTEBOOKS = sorted(TUTORIALS.glob("*.ipynb"))
NO_DOT_MARK = "`dot` program is not installed"
_EXECUTED = {}


def tags(cell):
    return cell.metadata.get("tags", [])


def with_probes(nb):
    """Before each exercise's solution cell, a copy of its check cell that must fail (nbclient lets a
    cell tagged raises-exception fail): a check that passes without the solution checks nothing."""
    cells = []
    for i, cell in enumerate(nb.cells):
        if "solution" in tags(cell):
            check = next(c for c in nb.cells[i + 1:] if "check" in tags(c))
            cells.append(nbformat.v4.new_code_cell(check.source, metadata={"tags": ["raises-exception", "probe"]}))
        cells.append(cell)
    nb.cells = cells
    return nb


def execute(path, env=None):
    """Run a notebook in a fresh kernel (on the default backend) and return it with its outputs.

    The HTML pages it writes (explorer pages) are kept as test artefacts, in tutorials/<notebook>/ of the
    artefact folder (tests/browser.py).
    """
    nb = with_probes(nbformat.read(path, as_version=4))
    env = {k: v for k, v in (env or os.environ).items() if k != "TINYFLOW_BACKEND"}
    with tempfile.TemporaryDirectory(prefix="tutorial-") as folder:  # files a notebook writes land here
        client = nbclient.NotebookClient(nb, timeout=180, kernel_name="python3",
                                         resources={"metadata": {"path": folder}})
        client.execute(env=env)
        pages = sorted(pathlib.Path(folder).rglob("*.html"))
        if pages:
            import shutil

            import browser
            keep = pathlib.Path(browser.artifacts_dir()) / "tutorials" / path.stem
            keep.mkdir(parents=True, exist_ok=True)
            for page in pages:
                shutil.copy(page, keep / page.name)
    return nb


def executed(path):
    """The notebook run once per session; a failed run fails every test that reads it (without rerunning)."""
    if path not in _EXECUTED:
        try:
            _EXECUTED[path] = execute(path)
        except Exception as err:  # noqa: BLE001 - remembered and raised again for each test of this notebook
            _EXECUTED[path] = err
    if isinstance(_EXECUTED[path], Exception):
        raise _EXECUTED[path]
    return _EXECUTED[path]


def outputs(nb):
    """What a reader of the notebook sees (the probes are the tests' own cells)."""
    return [o for c in nb.cells if c.cell_type == "code" and "probe" not in tags(c) for o in c.outputs]


def texts(nb):
    """Every piece of text a reader sees: streams, plain-text and HTML displays, tracebacks."""
    found = []
    for o in outputs(nb):
        found += [o.get("text", ""), "\n".join(o.get("traceback", []))]
        found += [str(o.get("data", {}).get(kind, "")) for kind in ("text/plain", "text/html")]
    return "\n".join(found)


def sources(path):
    return "\n".join(c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code")


def draws_graphs(path):
    return any(call in sources(path) for call in ("to_graphviz", "backprop_steps"))


def draws_plots(path):
    return any(call in sources(path) for call in ("tfl.plot", "plot_memory"))


def graph_pictures(nb):
    """Graphviz pictures: SVG displays, or HTML with embedded SVG (the backprop stepper)."""
    return [o for o in outputs(nb) if "image/svg+xml" in o.get("data", {})
            or "data:image/svg+xml" in str(o.get("data", {}).get("text/html", ""))]


def test_there_are_eight_tutorials_committed_without_outputs():
    assert [p.name[:2] for p in NOTEBOOKS] == [f"{i:02d}" for i in range(1, len(NOTEBOOKS) + 1)]
    for path in NOTEBOOKS:
        nb = nbformat.read(path, as_version=4)
        code = [c for c in nb.cells if c.cell_type == "code"]
        assert all(not c.outputs and c.execution_count is None for c in code), f"{path.name} has outputs"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_every_tutorial_ends_with_exercises_that_check_themselves(path):
    """2-3 exercises at the end, each with a collapsed solution cell and a check cell that asserts."""
    nb = nbformat.read(path, as_version=4)
    start = next(i for i, c in enumerate(nb.cells) if c.cell_type == "markdown" and c.source.startswith("## Exercises"))
    tail = nb.cells[start + 1:]
    solutions = [c for c in tail if "solution" in c.metadata.get("tags", [])]
    checks = [c for c in tail if "check" in c.metadata.get("tags", [])]
    assert 2 <= len(solutions) == len(checks) <= 3, path.name
    assert all(c.metadata.get("jupyter", {}).get("source_hidden") for c in solutions), "solutions start collapsed"
    assert all("assert" in c.source for c in checks), "every check asserts something"


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_exercise_checks_fail_without_their_solutions(path):
    probes = [c for c in executed(path).cells if "probe" in tags(c)]
    assert len(probes) >= 2
    for probe in probes:
        errors = [o for o in probe.outputs if o.output_type == "error"]
        assert errors and errors[0].ename in ("NameError", "AssertionError", "NotImplementedError"), probe.source


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs_without_errors_or_tracebacks(path):
    nb = executed(path)
    assert not [o for o in outputs(nb) if o.output_type == "error"]
    assert "Traceback" not in texts(nb) and "ExecutableNotFound" not in texts(nb)


@pytest.mark.slow
@pytest.mark.parametrize("path", [p for p in NOTEBOOKS if draws_plots(p)],
                         ids=[p.stem for p in NOTEBOOKS if draws_plots(p)])
def test_notebook_shows_plots(path):
    """matplotlib plots need no graphviz: they show as PNG on every machine."""
    assert [o for o in outputs(executed(path)) if "image/png" in o.get("data", {})]


@pytest.mark.slow
@pytest.mark.parametrize("path", [p for p in NOTEBOOKS if draws_graphs(p)],
                         ids=[p.stem for p in NOTEBOOKS if draws_graphs(p)])
def test_notebook_shows_graph_pictures(path):
    nb = executed(path)
    if not tfl.viz.dot_available():
        assert NO_DOT_MARK in texts(nb) and "digraph" in texts(nb)  # the DOT source and the reason instead
        pytest.skip("graphviz's `dot` is not installed (apt-get install graphviz): graph pictures cannot be "
                    "rendered; checked that the notebook shows the DOT source instead")
    assert graph_pictures(nb), f"{path.name} shows no graph picture"
    assert NO_DOT_MARK not in texts(nb)


def path_without_dot(folder):
    """$PATH with every directory that holds `dot` replaced by a copy (of symlinks) without it."""
    entries = []
    for i, entry in enumerate(os.environ.get("PATH", "").split(os.pathsep)):
        if entry and os.path.exists(os.path.join(entry, "dot")):
            copy = folder / f"bin{i}"
            copy.mkdir()
            for name in os.listdir(entry):
                if name != "dot":
                    os.symlink(os.path.join(entry, name), copy / name)
            entry = str(copy)
        entries.append(entry)
    return os.pathsep.join(entries)


@pytest.mark.slow
def test_a_notebook_without_dot_shows_dot_source_instead_of_a_traceback(tmp_path):
    """Tutorial 02 draws graphs, backprop frames and the stepper: with `dot` off the PATH none of them fails."""
    path = TUTORIALS / "02_backprop.ipynb"
    nb = execute(path, env={**os.environ, "PATH": path_without_dot(tmp_path)})
    assert not [o for o in outputs(nb) if o.output_type == "error"]
    shown = texts(nb)
    assert "Traceback" not in shown and "ExecutableNotFound" not in shown
    assert shown.count(NO_DOT_MARK) >= 3 and "digraph tinyflow" in shown and "digraph step" in shown
    assert not graph_pictures(nb)


def test_the_dev_extra_installs_every_jupyter_command_the_readme_names():
    """tutorials/README.md tells users to run `jupyter lab` and `jupyter nbconvert`: [dev] brings them."""
    import ast
    setup = (TUTORIALS.parent / "setup.py").read_text()
    start = setup.index("extras_require=") + len("extras_require=")
    extras = ast.literal_eval(setup[start:].split("\n    },")[0] + "\n}")
    dev = {re.split(r"[<>=;\[ ]", requirement)[0].lower() for requirement in extras["dev"]}
    commands = set(re.findall(r"`jupyter (\w+)", (TUTORIALS / "README.md").read_text()))
    package = {"lab": "jupyterlab", "notebook": "notebook", "nbconvert": "nbconvert"}
    assert commands and commands <= set(package), commands
    assert {package[c] for c in commands} <= dev, (commands, dev)
    assert "ipykernel" in dev and "nbclient" in dev


@pytest.mark.slow
def test_the_explorer_tutorial_writes_its_pages_as_artefacts():
    """Tutorial 13's explorer pages are kept: each holds its data, and the model's page its values."""
    import json

    import browser
    nb = executed(TUTORIALS / "13_explorer_and_board.ipynb")
    inline = [str(o["data"]["text/html"]) for o in outputs(nb) if "text/html" in o.get("data", {})]
    assert any(h.startswith("<iframe srcdoc=") and "tinyflow-data" in h for h in inline)  # shown in the notebook
    folder = pathlib.Path(browser.artifacts_dir()) / "tutorials" / "13_explorer_and_board"
    pages = {p.name: p.read_text(encoding="utf-8") for p in folder.glob("*.html")}
    assert {"mlp_explorer.html", "diamond_explorer.html", "plan_explorer.html", "graph.html"} <= set(pages)
    data = json.loads(re.search(r'id="tinyflow-data">(.*?)</script>', pages["mlp_explorer.html"], re.S).group(1))
    assert data["backprop_order"][0] == "loss" and all(n["value"] is not None for n in data["nodes"])
    assert all(re.fullmatch(r"cell \d+, line \d+", n["site"]) for n in data["nodes"])  # a notebook's creation sites
