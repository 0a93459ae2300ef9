"""The package's layers, read from every module's imports (at the top or inside a function): a module imports only
from its own layer or lower ones, and never the package root. docs/ARCHITECTURE.md draws the same picture."""
import ast
import pathlib

import pytest

PACKAGE = pathlib.Path(__file__).resolve().parents[1] / "tinyflow"

# low to high; a higher layer plugs into a lower one through a registry the lower one owns
LAYERS = [
    {"errors", "shapes", "dtypes", "arguments", "random"},
    {"graph", "nodes"},
    {"ops"},
    {"autodiff"},
    {"backends", "_ckernels"},
    {"passes"},
    {"session"},
    {"control_flow"},
    {"eager"},
    {"nn", "optim", "data", "metrics", "checkpoint"},
    {"jit"},
    {"onnx", "viz", "board", "distributed", "model", "plot", "progress", "testing", "teaching",
     "__init__"},
    {"cli", "demos", "__main__"},  # the applications on top: the command line and the demos use tinyflow as users do
]
APPLICATIONS = LAYERS[-1]
LAYER = {name: level for level, names in enumerate(LAYERS) for name in names}


def modules():
    """(dotted name, path, layer) of every module of the package."""
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        top = parts[1] if len(parts) > 1 else "__init__"
        yield ".".join(parts), path, LAYER[top[:-3] if top.endswith(".py") else top]


def imported(name, path):
    """(line, dotted target inside tinyflow) of every import in a module."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")[:len(package.split(".")) - node.level + 1] if node.level else []
            module = ".".join(base + ([node.module] if node.module else []))
            targets = [f"{module}.{a.name}" if node.module or node.level else module for a in node.names]
        else:
            continue
        for target in targets:
            if target == "tinyflow" or target.startswith("tinyflow."):
                yield node.lineno, target


def layer_of(target):
    parts = target.split(".")
    return LAYER.get(parts[1], LAYER["__init__"]) if len(parts) > 1 else LAYER["__init__"]


def violations():
    found = []
    for name, path, level in modules():
        for line, target in imported(name, path):
            if name.split(".")[1] in APPLICATIONS if "." in name else False:
                continue
            if target == "tinyflow" or target.rpartition(".")[0] == "tinyflow" and target.split(".")[1] not in LAYER:
                found.append(f"{path.relative_to(PACKAGE.parent)}:{line} imports the package root ({target})")
            elif layer_of(target) > level:
                found.append(f"{path.relative_to(PACKAGE.parent)}:{line} imports {target}, a higher layer")
    return found


def test_every_top_level_name_of_the_package_has_a_layer():
    tops = {p.stem if p.is_file() else p.name for p in PACKAGE.iterdir() if p.suffix == ".py" or (p / "__init__.py").exists()}
    assert tops - set(LAYER) == set()


def test_no_module_imports_a_higher_layer_or_the_package_root():
    problems = violations()
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("source, expected", [("from ..eager import Tensor", "higher layer"), ("import tinyflow", "root")])
def test_the_check_sees_imports_inside_functions(tmp_path, monkeypatch, source, expected):
    module = tmp_path / "tinyflow" / "ops"
    module.mkdir(parents=True)
    (module / "probe.py").write_text(f"def late():\n    {source}\n")
    monkeypatch.setattr(__import__(__name__), "PACKAGE", tmp_path / "tinyflow")
    assert any(expected in v for v in violations())
