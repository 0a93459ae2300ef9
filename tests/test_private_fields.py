"""No package reads or writes a private field (`obj._name`) that the core packages define for their own objects: the
graph, nodes, session, passes, optimizers and autodiff give other packages public names instead (issue 34)."""
import ast
import pathlib

PACKAGE = pathlib.Path(__file__).resolve().parents[1] / "tinyflow"
CORE = {"graph", "nodes", "session", "passes", "optim", "autodiff"}
# a field still shared across packages, with the reason: eager/runtime.py sets an eager op's creation site on its hot
# path (a plain attribute store, where the public Node.site would be a property call)
SHARED = {"_site": {"eager"}}


def package_of(path):
    parts = path.relative_to(PACKAGE).with_suffix("").parts
    return parts[0] if len(parts) > 1 else parts[0]


def private_fields(tree):
    """The private names a module gives its own objects (`self._x = ...`) or defines (`def _x`)."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
            names.add(node.attr)
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
    return {n for n in names if n.startswith("_") and not n.startswith("__")}


def test_no_package_touches_a_private_field_of_the_core_packages():
    trees = {path: ast.parse(path.read_text(encoding="utf-8")) for path in PACKAGE.rglob("*.py")}
    own = {}
    for path, tree in trees.items():
        own.setdefault(package_of(path), set()).update(private_fields(tree))
    core_fields = set().union(*(own.get(p, set()) for p in CORE))
    found = []
    for path, tree in trees.items():
        package = package_of(path)
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and node.attr in core_fields and node.attr not in own[package]
                    and package not in SHARED.get(node.attr, ())
                    and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"))):
                found.append(f"{path.relative_to(PACKAGE)}:{node.lineno} .{node.attr}")
    assert not found, "private fields of the core packages used elsewhere (give them a public name): " + ", ".join(found)
