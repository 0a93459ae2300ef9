"""No package reads or writes a private name (`obj._x`, `module._x`, `from ..pkg.module import _x`) that another
package defines: packages give each other public, documented names instead (issue 34)."""
import ast
import pathlib

PACKAGE = pathlib.Path(__file__).resolve().parents[1] / "tinyflow"


def package_of(path):
    """'ops' for tinyflow/ops/..., 'graph' for tinyflow/graph.py: a top-level module is a package of its own."""
    return path.relative_to(PACKAGE).with_suffix("").parts[0]


def private_names(tree):
    """The private names a module gives its own objects (`self._x = ...`), defines (`def _x`, `class _X`) or binds
    at module level (`_CACHE = {}`)."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
            names.add(node.attr)
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
    for statement in tree.body:
        targets = statement.targets if isinstance(statement, ast.Assign) else [getattr(statement, "target", None)]
        names.update(t.id for t in targets if isinstance(t, ast.Name))
    return {n for n in names if n.startswith("_") and not n.startswith("__")}


def imported_package(path, node):
    """The package a relative `from ... import` in `path` reads from (None for an absolute import)."""
    if not node.level:
        return None
    here = list(path.relative_to(PACKAGE).parts[:-1])
    base = here[:len(here) - (node.level - 1)] if node.level > 1 else here
    parts = base + (node.module.split(".") if node.module else [])
    return parts[0] if parts else None


def test_no_package_touches_a_private_name_of_another():
    trees = {path: ast.parse(path.read_text(encoding="utf-8")) for path in PACKAGE.rglob("*.py")}
    own = {}
    for path, tree in trees.items():
        own.setdefault(package_of(path), set()).update(private_names(tree))
    everyones = set().union(*own.values())
    found = []
    for path, tree in trees.items():
        package = package_of(path)
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and node.attr in everyones and node.attr not in own[package]
                    and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"))):
                found.append(f"{path.relative_to(PACKAGE)}:{node.lineno} .{node.attr}")
            elif isinstance(node, ast.ImportFrom) and imported_package(path, node) not in (None, package):
                found += [f"{path.relative_to(PACKAGE)}:{node.lineno} import {a.name}" for a in node.names
                          if a.name.startswith("_") and not a.name.startswith("__")]
    assert not found, "private names of another package used (give them a public name): " + ", ".join(found)
