"""An op's constructor attributes, generically: read them from a node, rebuild the op from them.

An op is built as `OpClass(*input_nodes, **attributes)`; its `__init__` parameters that are not inputs are attributes,
kept as `self.<param>` (or under an alias below). So saving and loading a graph need no per-op code.
"""
import inspect

import numpy as np

from ..errors import CheckpointError
from ..nodes import OP_TYPES, Node

# (op type or "*", parameter) -> the attribute holding it, for names a Node already uses or ops rename
ALIASES = {("Reshape", "shape"): "target", ("BroadcastTo", "shape"): "target", ("Cast", "dtype"): "target_dtype",
           ("Fill", "dtype"): "fill_dtype",
           ("*", "kernel_size"): "kernel"}
_NODE_PROPERTIES = {"shape", "dtype", "name", "inputs", "graph", "consumers", "op_type"}
# constructor parameters that hold input nodes (a list or *args), not attributes
_INPUT_LISTS = {"xs", "inputs", "ops"}


# op types renamed since files were first saved: old name -> current name (the 2-D ops became N-d)
RENAMED = {"Conv2D": "Conv", "Conv2DBackInput": "ConvBackInput", "Conv2DBackFilter": "ConvBackFilter",
           "MaxPool2D": "MaxPool", "MaxPool2DGrad": "MaxPoolGrad", "MaxPool2DGather": "MaxPoolGather",
           "AvgPool2D": "AvgPool", "AvgPool2DGrad": "AvgPoolGrad"}

# (op type, parameter): optional inputs given as keyword parameters (an attribute instead when the op keeps a
# value that is not a node under that name, as Resize keeps static sizes)
OPTIONAL_INPUTS = {("DropoutMask", "training"), ("Resize", "sizes"), ("ResizeGrad", "sizes")}


def _signature(cls):
    """The constructor's parameters but self and name; `**attributes` (the elementwise ops') are cls.attributes."""
    params = []
    for p in list(inspect.signature(cls.__init__).parameters.values())[1:]:
        if p.kind == p.VAR_KEYWORD:
            attributes = getattr(cls, "attributes", {})
            params += [inspect.Parameter(a, p.KEYWORD_ONLY, default=d) for a, d in attributes.items()]
        elif p.name != "name":
            params.append(p)
    return params


def _attribute_name(op_type, param):
    return ALIASES.get((op_type, param)) or ALIASES.get(("*", param)) or param


def _is_nodes(value):
    return isinstance(value, Node) or (isinstance(value, (list, tuple)) and len(value) > 0
                                       and all(isinstance(v, Node) for v in value))


def _is_input_param(op, p):
    optional = (op.op_type, p.name) in OPTIONAL_INPUTS
    if not optional and (p.kind == p.VAR_POSITIONAL or p.name in _INPUT_LISTS):
        return True
    if not optional and (p.default is not inspect.Parameter.empty or p.kind == p.KEYWORD_ONLY):
        return False
    # an optional input, or a positional parameter without a default: an input unless the op keeps an attribute
    value = getattr(op, _attribute_name(op.op_type, p.name), None)
    return value is None or _is_nodes(value)


def op_attributes(op):
    """{parameter: value} to pass to the op's constructor next to its inputs."""
    cls, attrs = type(op), {}
    for p in _signature(cls):
        if _is_input_param(op, p):
            continue
        attr = _attribute_name(cls.op_type, p.name)
        if attr in _NODE_PROPERTIES:
            raise TypeError(f"op type '{cls.op_type}': constructor parameter '{p.name}' clashes with a node "
                            "property; add an alias to tinyflow.jit.ops_io.ALIASES")
        value = getattr(op, attr, None)
        if value is not None and not _is_nodes(value):
            attrs[p.name] = value
        elif p.default is not inspect.Parameter.empty:
            attrs[p.name] = p.default
        else:
            raise TypeError(f"op type '{cls.op_type}' keeps no attribute '{attr}' for its constructor parameter "
                            f"'{p.name}'; store it as self.{p.name} or add an alias to tinyflow.jit.ops_io.ALIASES")
    return attrs


def build_op(op_type, inputs, attrs, name=None):
    """A new op of `op_type` on `inputs` with constructor attributes `attrs` (in the default graph)."""
    op_type = RENAMED.get(op_type, op_type)
    cls = OP_TYPES.get(op_type)
    if cls is None:
        raise CheckpointError(f"unknown op type '{op_type}': it is not registered in this tinyflow "
                              "(a newer tinyflow, or a custom op whose module must be imported before loading)")
    params = [p for p in _signature(cls) if p.name not in attrs]
    args, kwargs, rest = [], {}, list(inputs)
    for p in params:
        if p.kind == p.VAR_POSITIONAL:
            args.extend(rest)
            rest = []
        elif p.name in _INPUT_LISTS:  # a list of inputs takes the rest: no op has an input after its list
            args.append(rest)
            rest = []
        elif (cls.op_type, p.name) in OPTIONAL_INPUTS:
            if rest:
                kwargs[p.name] = rest.pop(0)
        elif rest:
            args.append(rest.pop(0))
        elif p.default is not inspect.Parameter.empty:
            continue  # an attribute the file predates: its default
        else:
            raise CheckpointError(f"op type '{op_type}' needs an input for '{p.name}' but the file gives "
                                  f"{len(inputs)} input(s)")
    if rest:
        raise CheckpointError(f"op type '{op_type}' takes fewer inputs than the {len(inputs)} the file gives")
    return cls(*args, **kwargs, **attrs, name=name)


# ------------------------------------------------------------ JSON encoding of attribute values
def encode(value):
    """An attribute value as JSON data (tuples, slices, None, Ellipsis, dtypes and small arrays included)."""
    if isinstance(value, (np.integer, np.floating)):
        return value.item()
    if value is None or isinstance(value, (bool, str, int, float)):
        return value
    if isinstance(value, np.dtype) or isinstance(value, type) and issubclass(value, np.generic):
        return {"dtype": np.dtype(value).str}
    if value is Ellipsis:
        return {"ellipsis": True}
    if isinstance(value, slice):
        return {"slice": [encode(value.start), encode(value.stop), encode(value.step)]}
    if isinstance(value, np.ndarray):
        if value.dtype.kind not in "biuf":
            raise TypeError(f"cannot save an array attribute of dtype {value.dtype}")
        return {"array": value.tolist(), "array_dtype": value.dtype.str, "array_shape": list(value.shape)}
    if isinstance(value, tuple):
        return {"tuple": [encode(v) for v in value]}
    if isinstance(value, list):
        return [encode(v) for v in value]
    raise TypeError(f"cannot save an attribute of type {type(value).__name__}: {value!r}")


def decode(data):
    """The inverse of `encode`; anything else in the file is a CheckpointError."""
    if data is None or isinstance(data, (bool, str, int, float)):
        return data
    if isinstance(data, list):
        return [decode(v) for v in data]
    if isinstance(data, dict):
        keys = set(data)
        if keys == {"dtype"}:
            return _dtype(data["dtype"])
        if keys == {"ellipsis"}:
            return Ellipsis
        if keys == {"slice"} and isinstance(data["slice"], list) and len(data["slice"]) == 3:
            return slice(*[decode(v) for v in data["slice"]])
        if keys == {"tuple"} and isinstance(data["tuple"], list):
            return tuple(decode(v) for v in data["tuple"])
        if keys == {"array", "array_dtype", "array_shape"}:
            try:  # _dtype allows numbers only
                return np.array(data["array"], dtype=_dtype(data["array_dtype"])).reshape(data["array_shape"])
            except (TypeError, ValueError) as err:
                raise CheckpointError(f"bad array attribute: {err}") from None
    raise CheckpointError(f"unexpected attribute value in the model file: {str(data)[:80]!r}")


def _dtype(text):
    try:
        dtype = np.dtype(str(text))
    except TypeError:
        raise CheckpointError(f"unknown dtype {text!r} in the model file") from None
    if dtype.kind not in "biuf" or dtype.hasobject:
        raise CheckpointError(f"dtype {text!r} is not allowed in a model file")
    return dtype
