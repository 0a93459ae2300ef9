"""Fetch structures: a node, a name, or nested lists/tuples/dicts of them, flattened and rebuilt."""


def flatten(structure):
    """The leaves (nodes or names) of a fetch structure, in order."""
    if isinstance(structure, dict):
        return [leaf for key in structure for leaf in flatten(structure[key])]
    if isinstance(structure, (list, tuple)):
        return [leaf for item in structure for leaf in flatten(item)]
    return [structure]


def rebuild(structure, values):
    """The fetch structure with its leaves replaced, in order, by `values` (an iterator)."""
    if isinstance(structure, dict):
        return type(structure)((key, rebuild(structure[key], values)) for key in structure)
    if isinstance(structure, list):
        return [rebuild(item, values) for item in structure]
    if isinstance(structure, tuple):
        items = [rebuild(item, values) for item in structure]
        return type(structure)(*items) if hasattr(structure, "_fields") else tuple(items)
    return next(values)
