"""ONNX's node conformance cases for every operator issue 24 lists, on the numpy and c backends.

A case the import does not support yet is an xfail naming the reason; a case that runs and
gives another answer fails. docs/onnx.md is the table of these results: the last test fails
when it differs from what this run gives (regenerate it with scripts/onnx_conformance.py).
The pass counts are printed at the end of the run (tests/onnx/conftest.py).
"""
import os

import pytest

import tinyflow as tfl

pytest.importorskip("onnx", reason="the onnx package is needed (pip install onnx)")
import conformance_cases as conformance  # noqa: E402

DOCS = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "onnx.md")
CASES = conformance.required_cases()
HAVE_C = "c" in tfl.backends.available()
BACKENDS = ["numpy", pytest.param("c", marks=pytest.mark.skipif(not HAVE_C, reason="the C kernel library is "
                                                                  "not built (python setup.py build_ext --inplace)"))]


@pytest.mark.parametrize("onnx_backend", BACKENDS)
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_node_case(case, onnx_backend):
    outcome = conformance.outcome(case, onnx_backend)
    if outcome.status == "unsupported":
        pytest.xfail(f"not supported yet: {outcome.reason}")
    assert outcome.status == "pass", f"{case.name} ({case.op}) on {onnx_backend}: {outcome.reason}"


def test_every_listed_operator_has_cases():
    ops = {c.op for c in CASES}
    assert set(conformance.REQUIRED_OPS) <= ops, set(conformance.REQUIRED_OPS) - ops


def test_docs_table_is_the_table_this_run_gives():
    import onnx
    if not HAVE_C:
        pytest.skip("docs/onnx.md has a column for the c backend, which is not built here")
    with open(DOCS, encoding="utf-8") as f:
        current = f.read()
    if f"cases of onnx {onnx.__version__} " not in current:
        pytest.skip(f"docs/onnx.md was made with another onnx version than this machine's {onnx.__version__}")
    expected = conformance.markdown() + "\n"
    assert current == expected, ("docs/onnx.md differs from this run's results; regenerate it with "
                                 "python scripts/onnx_conformance.py and commit it")
