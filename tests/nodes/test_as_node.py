"""Values that no kernel can compute are refused when the graph is built, not when it runs."""
import numpy as np
import pytest

import tinyflow as tfl



@pytest.mark.parametrize("value", ["x", b"x", None, {"a": 1}, np.array(["a"]), np.array([1 + 2j]),
                                   np.array([object()], dtype=object), [[1.0], [1.0, 2.0]]],
                         ids=["str", "bytes", "None", "dict", "str-array", "complex", "object", "ragged"])
def test_non_numeric_values_are_an_argument_error_at_construction(value):
    with pytest.raises(tfl.ArgumentError, match="Constant: value=.*(not bools, ints or floats|cannot become an array)"):
        tfl.relu(value)
    assert list(tfl.get_default_graph().nodes) == []  # nothing half-built


def test_a_string_gets_a_hint_towards_the_node():
    x = tfl.Placeholder((2,), name="x")
    with pytest.raises(tfl.ArgumentError, match="the node itself rather than its name"):
        x + "x"


@pytest.mark.parametrize("value, kind", [(True, "b"), (3, "i"), (2.5, "f"), (np.arange(3, dtype=np.int32), "i"),
                                         ([1.0, 2.0], "f")])
def test_numbers_and_numeric_arrays_still_become_constants(value, kind):
    node = tfl.nodes.as_node(value)
    assert node.op_type == "Constant" and node.dtype.kind == kind
