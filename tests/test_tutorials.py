"""Every tutorial notebook runs top to bottom (its own asserts included) and shows pictures."""
import pathlib

import pytest

nbformat = pytest.importorskip("nbformat", reason="nbformat is not installed (pip install -e '.[dev]')")
nbclient = pytest.importorskip("nbclient", reason="nbclient is not installed (pip install -e '.[dev]')")

BACKEND_INDEPENDENT = True  # a notebook picks its backends itself: run each once
TUTORIALS = pathlib.Path(__file__).resolve().parent.parent / "tutorials"
NOTEBOOKS = sorted(TUTORIALS.glob("*.ipynb"))
PICTURES = {"image/png", "image/svg+xml"}


def test_there_are_eight_tutorials_committed_without_outputs():
    assert [p.name[:2] for p in NOTEBOOKS] == [f"{i:02d}" for i in range(1, len(NOTEBOOKS) + 1)]
    for path in NOTEBOOKS:
        nb = nbformat.read(path, as_version=4)
        code = [c for c in nb.cells if c.cell_type == "code"]
        assert all(not c.outputs and c.execution_count is None for c in code), f"{path.name} has outputs"


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs_and_shows_pictures(path, tmp_path, monkeypatch):
    monkeypatch.delenv("TINYFLOW_BACKEND", raising=False)  # notebooks run on the default backend
    nb = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(nb, timeout=120, kernel_name="python3",
                                     resources={"metadata": {"path": str(tmp_path)}})
    client.execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    pictures = [o for o in outputs if PICTURES & set(o.get("data", {}))]
    assert pictures, f"{path.name} shows no picture"
    errors = [o for o in outputs if o.output_type == "error"]
    assert not errors


def test_every_notebook_picture_kind_is_counted():
    """Plots must show as PNG in a kernel without pyplot: tinyflow figures carry their own _repr_png_."""
    import tinyflow as tfl
    fig = tfl.plot.figure(figsize=(2, 2))
    fig.add_subplot(1, 1, 1).plot([0, 1], [1, 0])
    assert fig._repr_png_()[:8] == b"\x89PNG\r\n\x1a\n"
