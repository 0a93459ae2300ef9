"""Every public op function is listed in the README's op table, and the table names nothing that is not public."""
import inspect
import pathlib
import re

import tinyflow as tfl


README = pathlib.Path(__file__).resolve().parents[2] / "README.md"
OP_MODULES = ("tinyflow.ops.", "tinyflow.nn.norm_layers", "tinyflow.control_flow.", "tinyflow.eager.tensor")
NOT_OPS = {"register_gradient", "not_differentiable", "elementwise_op"}  # the APIs for making ops


def op_table():
    """The `name`s in the function column of the README's "The ops" table."""
    section = README.read_text().split("### The ops\n", 1)[1].split("\n### ", 1)[0]
    rows = [line.split("|")[2] for line in section.splitlines() if line.startswith("| ") and "`" in line]
    return {name for cell in rows for name in re.findall(r"`([a-z_0-9]+)`", cell)}


def test_every_public_op_is_in_the_readme_op_table():
    public = {n for n in tfl.__all__ if inspect.isfunction(getattr(tfl, n))
              and getattr(tfl, n).__module__.startswith(OP_MODULES)} - NOT_OPS
    listed = op_table()
    assert public - listed == set(), f"add these to README.md's op table ('### The ops'): {sorted(public - listed)}"
    assert listed - public == set(), f"README.md's op table names what tfl does not export: {sorted(listed - public)}"
