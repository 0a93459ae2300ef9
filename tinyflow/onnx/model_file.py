"""Reading an ONNX model safely, and checking it whole before anything is built; each problem is an OnnxImportError
saying what is wrong and where. External data is read only from regular files inside the model's own folder."""
import collections
import heapq
import math
import os

import numpy as np

from ..errors import OnnxImportError
from .storage_types import numpy_dtype, onnx_type_name

DEFAULT_DOMAINS = ("", "ai.onnx")
MAX_MODEL_BYTES = 2 << 30  # protobuf's own limit: a bigger file cannot be one ModelProto
MAX_TENSOR_BYTES = 1 << 40  # 1 TiB, more than any machine tinyflow runs on: a bigger size is damage or an attack


def onnx_module(error=OnnxImportError):
    """The onnx package, or `error` saying how to install it."""
    try:
        import onnx
    except ImportError:
        raise error(f"tfl.onnx.{'load' if error is OnnxImportError else 'export'} needs the `onnx` package: "
                    "pip install onnx (or pip install -e '.[dev]')") from None
    return onnx


def read_model(source):
    """(ModelProto, folder of the file or None) from a path, the file's bytes or a ModelProto."""
    onnx = onnx_module()
    if isinstance(source, onnx.ModelProto):
        return check_text(source, "the ModelProto given"), None
    if isinstance(source, (bytes, bytearray, memoryview)):
        return _parse(onnx, bytes(source), "the bytes given"), None
    if isinstance(source, (str, os.PathLike)):
        path = os.fspath(source)
        if not os.path.exists(path):
            raise OnnxImportError(f"no such ONNX model file: '{path}'")
        if not os.path.isfile(path):
            raise OnnxImportError(f"'{path}' is not a file; pass the path of a .onnx file")
        if os.path.getsize(path) > MAX_MODEL_BYTES:
            raise OnnxImportError(f"'{path}' is bigger than 2 GB, the most one ONNX file can hold; big models "
                                  "keep their weights in external data files next to the model")
        with open(path, "rb") as f:
            return _parse(onnx, f.read(), f"'{path}'"), os.path.dirname(os.path.realpath(path))
    raise OnnxImportError(f"tfl.onnx.load takes a file path, the file's bytes or an onnx.ModelProto, "
                          f"got {type(source).__name__}")


def _parse(onnx, data, what):
    from google.protobuf.message import DecodeError
    model = onnx.ModelProto()
    try:
        model.ParseFromString(data)
    except (DecodeError, RuntimeError, ValueError) as err:
        raise OnnxImportError(f"{what} is not an ONNX model: the file is truncated or corrupted "
                              f"(protobuf says: {err})") from None
    if not model.HasField("graph"):
        raise OnnxImportError(f"{what} is not an ONNX model: it holds no graph (an empty, truncated or "
                              "unrelated file?)")
    return check_text(model, what)


def check_text(message, what, path="model"):
    """`message` itself; OnnxImportError when one of its text fields (a name, a key) is not UTF-8."""
    for field, value in message.ListFields():
        items = value if field.is_repeated else [value]
        for i, item in enumerate(items):
            where = f"{path}.{field.name}" + (f"[{i}]" if field.is_repeated else "")
            if field.type == field.TYPE_MESSAGE:
                check_text(item, what, where)
            elif field.type == field.TYPE_STRING and isinstance(item, bytes):  # protobuf's answer for bad UTF-8
                raise OnnxImportError(f"the model in {what} is damaged: its text field {where} holds {item[:60]!r}, "
                                      "which is not UTF-8 (a flipped byte?); export the model again")
    return message


def tensor_to_array(tensor, folder, what):
    """A TensorProto's value as a numpy array; external data is read from `folder` only."""
    onnx = onnx_module()
    dtype = _dtype(tensor.data_type, what)
    size = tensor_bytes(tensor.dims, dtype, what)
    if tensor.data_location == onnx.TensorProto.EXTERNAL:
        return _external_array(tensor, folder, what, dtype, size)
    try:
        return np.array(onnx.numpy_helper.to_array(tensor))
    except Exception as err:  # noqa: BLE001 - numpy's and protobuf's messages name no tensor
        raise OnnxImportError(f"{what} is malformed: it does not hold the {size // dtype.itemsize} values "
                              f"of shape {tuple(tensor.dims)} ({type(err).__name__}: {err})") from None


def tensor_bytes(shape, dtype, what):
    """The bytes of a tensor of `shape` (None dims count as 1): OnnxImportError for a negative or absurd size."""
    if any(d is not None and d < 0 for d in shape):
        raise OnnxImportError(f"{what} has the shape {tuple(shape)}, with a negative dimension; sizes are 0 or more "
                              "(the file is damaged)")
    size = math.prod(int(d) for d in shape if d is not None) * np.dtype(dtype).itemsize
    if size > MAX_TENSOR_BYTES:
        raise OnnxImportError(f"{what} has the shape {tuple(shape)}: {size:,} bytes, more than the "
                              f"{MAX_TENSOR_BYTES:,} tinyflow accepts for one tensor; the model is damaged or "
                              "hostile")
    return size


def _external_array(tensor, folder, what, dtype, expected):
    """The array of a tensor in an external file, which must be a regular file inside `folder`."""
    info = {entry.key: entry.value for entry in tensor.external_data}
    location = info.get("location", "")
    if folder is None:
        raise OnnxImportError(f"{what} is stored in the external file '{location}'; load the model from its "
                              "path (tfl.onnx.load('model.onnx')) so tinyflow knows the folder to read it from")
    if not location:
        raise OnnxImportError(f"{what} says its data is in an external file but names none")
    if "\0" in location:
        raise OnnxImportError(f"{what}: the external data path {location!r} holds a NUL character, which no file "
                              "name can (the file is damaged)")
    if location.startswith(("/", "\\")) or location[1:2] == ":" or ".." in location.replace("\\", "/").split("/"):
        raise OnnxImportError(f"{what}: the external data path '{location}' is absolute or leaves the model's folder "
                              "('..'); an ONNX model may only read data files inside its own folder")
    path, root = os.path.realpath(os.path.join(folder, location)), os.path.realpath(folder)
    if os.path.commonpath([root, path]) != root:
        raise OnnxImportError(f"{what}: the external data path '{location}' resolves to '{path}', outside the "
                              f"model's folder '{root}' (a symbolic link?); an ONNX model may only read data "
                              "files inside its own folder")
    if not os.path.isfile(path):
        raise OnnxImportError(f"{what}: the external data file '{location}' is missing from '{root}'")
    try:
        offset, length = int(info.get("offset", 0)), int(info.get("length", expected))
    except ValueError:
        raise OnnxImportError(f"{what}: the external data offset/length {info} are not integers") from None
    size = os.path.getsize(path)
    if offset < 0 or length != expected or offset + length > size:
        raise OnnxImportError(f"{what}: the external file '{location}' ({size} bytes) does not hold {expected} bytes "
                              f"at offset {offset} (shape {tuple(tensor.dims)}, {dtype}); the data file does not "
                              "belong to this model or is truncated")
    with open(path, "rb") as f:
        f.seek(offset)
        return np.frombuffer(f.read(length), dtype=dtype).reshape(tuple(tensor.dims)).copy()


def declared_type(value_info, what):
    """(static shape, numpy dtype) of a ValueInfoProto of a tensor; a narrow type's values in its holding dtype."""
    kind = value_info.type.WhichOneof("value")
    if kind != "tensor_type":
        kinds = {"sequence_type": "a sequence", "optional_type": "an optional value", "map_type": "a map",
                 "sparse_tensor_type": "a sparse tensor", None: "a value of no type"}
        raise OnnxImportError(f"{what} is {kinds.get(kind, kind)}, not a tensor; tinyflow imports tensors only",
                              unsupported=kind is not None)
    tensor_type = value_info.type.tensor_type
    dtype = _dtype(tensor_type.elem_type, what, narrow=True)
    if not tensor_type.HasField("shape"):
        return None, dtype
    shape = tuple(d.dim_value if d.HasField("dim_value") else None for d in tensor_type.shape.dim)
    tensor_bytes(shape, dtype, what)
    return shape, dtype


def _dtype(elem_type, what, narrow=False):
    """The numpy dtype of an ONNX element type (`narrow`: also a narrow type's, holding its values)."""
    dtype = numpy_dtype(elem_type, narrow)
    if dtype is None:
        raise OnnxImportError(f"{what} has element type {onnx_type_name(elem_type)}, which tinyflow does not compute "
                              "with (float16/32/64, signed and unsigned ints and bool are supported)", unsupported=True)
    return dtype


def default_opset(model):
    """The version of the default ONNX domain the model imports (OnnxImportError if none or unknown)."""
    onnx = onnx_module()
    newest = onnx.defs.onnx_opset_version()
    versions = [op.version for op in model.opset_import if op.domain in DEFAULT_DOMAINS]
    if not versions:
        raise OnnxImportError("the model imports no opset of the default ONNX domain (opset_import is empty); "
                              "it was not written by an ONNX exporter, or the file is damaged")
    version = int(versions[0])
    if not 1 <= version <= newest:
        raise OnnxImportError(f"the model uses ONNX opset {version}, which this onnx package ({onnx.__version__}) "
                              f"does not know (opsets 1 to {newest}); upgrade onnx (pip install -U onnx) or export "
                              "the model with an older opset", unsupported=version > newest)
    return version


def subgraphs(node):
    """The graphs a node carries in attributes (If branches, Loop bodies)."""
    graph = onnx_module().AttributeProto.GRAPH
    return [g for attr in node.attribute for g in ([attr.g] if attr.type == graph else attr.graphs)]


def check_graphs(model, opset, rules):
    """Check names, cycles, domains and rules of the graph and its subgraphs: {id(graph): (graph, its nodes in
    topological order, the names it reads from outside)}."""
    onnx = onnx_module()
    context = onnx.checker.C.CheckerContext()
    context.ir_version = min(max(int(model.ir_version), 3), onnx.IR_VERSION)  # the checker's range
    context.opset_imports = {op.domain: int(op.version) for op in model.opset_import}
    checked = {}  # (holding each graph keeps its id its own)

    def check(graph, outer, where):
        for kind, values in (("input", graph.input), ("initializer", graph.initializer)):
            counts = collections.Counter(v.name for v in values)
            bad = next((name for name, count in counts.items() if count > 1 or not name), None)
            if bad is not None:
                raise OnnxImportError(f"{where} has " + (f"two {kind}s named '{bad}'" if bad else f"an {kind} without "
                                      "a name") + "; every ONNX value has one name of its own")
        defined = {v.name for v in graph.input} | {v.name for v in graph.initializer}
        if len(graph.sparse_initializer):
            raise OnnxImportError(f"{where} has sparse initializers, which tinyflow does not import",
                                  unsupported=True)
        producers = {}  # value name -> index of the node producing it
        nodes = list(graph.node)
        for index, node in enumerate(nodes):
            _check_node(node, where, opset, rules, onnx.checker, context)
            for out in filter(None, node.output):  # (an omitted optional output has an empty name)
                if out in producers or out in defined:
                    raise OnnxImportError(f"{where}: the value '{out}' is produced twice (by {describe(node)} and "
                                          "earlier); every ONNX value has one producer")
                producers[out] = index
        known = defined | set(producers)
        needs, free = [], set()
        for node in nodes:
            reads = {i for i in node.input if i}
            for sub in subgraphs(node):
                reads |= check(sub, outer | known, f"a subgraph of {describe(node)}")
            for name in reads - known - outer:
                raise OnnxImportError(f"{describe(node)} reads '{name}', which is not a graph input, an "
                                      f"initializer or the output of any node in {where}; the model is "
                                      "incomplete (truncated?) or was edited by hand")
            free |= reads - known
            needs.append({producers[n] for n in reads if n in producers})
        order = _sorted(nodes, needs, where)
        for name in {out.name for out in graph.output} - known - outer:
            raise OnnxImportError(f"{where} declares the output '{name}', but nothing produces it")
        free |= {out.name for out in graph.output} - known
        checked[id(graph)] = (graph, order, free)
        return free
    check(model.graph, frozenset(), "the model's graph")
    return checked


def _check_node(node, where, opset, rules, checker, context):
    if node.domain not in DEFAULT_DOMAINS:
        raise OnnxImportError(f"{describe(node)} belongs to the operator domain '{node.domain}', which tinyflow "
                              "does not import (only the default ONNX domain); export the model with standard "
                              "ONNX ops", unsupported=True)
    if node.op_type not in rules:
        raise OnnxImportError(
            f"{describe(node)} in {where}: tinyflow has no import rule for the ONNX op '{node.op_type}' "
            f"(opset {opset}). tinyflow.onnx.rules.IMPORTS lists the {len(rules)} ops it imports "
            "(docs/onnx.md: how each fares); an import rule is one function (see tinyflow/onnx/rules)",
            unsupported=True)
    if subgraphs(node):
        return  # the checker cannot see the outer names a subgraph reads; its nodes are checked one by one
    try:
        checker.check_node(node, context)
    except checker.ValidationError as err:
        raise OnnxImportError(f"{describe(node)} is not valid ONNX (opset {opset}): "
                              f"{str(err).strip().splitlines()[0]}") from None


def _sorted(nodes, needs, where):
    """Kahn's algorithm over the nodes (`needs[i]`: indices of the nodes node i reads); cycles are errors."""
    waiting = [len(n) for n in needs]
    users = [[] for _ in nodes]
    for i, producers in enumerate(needs):
        for p in producers:
            users[p].append(i)
    ready = [i for i, w in enumerate(waiting) if w == 0]  # a heap of indices: a sorted graph keeps its order
    order = []
    while ready:
        i = heapq.heappop(ready)
        order.append(nodes[i])
        for j in users[i]:
            waiting[j] -= 1
            if waiting[j] == 0:
                heapq.heappush(ready, j)
    if len(order) < len(nodes):
        stuck = [describe(nodes[i]) for i, w in enumerate(waiting) if w > 0][:4]
        raise OnnxImportError(f"{where} has a cycle: {', '.join(stuck)} wait on each other's outputs; an ONNX "
                              "graph must be acyclic (loops are written with the Loop op)")
    return order


def describe(node):
    """"Add node 'name'" (or "Add node producing 'out'" when the node has no name) for messages."""
    if node.name:
        return f"{node.op_type} node '{node.name}'"
    outputs = [o for o in node.output if o]
    return f"{node.op_type} node producing '{outputs[0]}'" if outputs else f"unnamed {node.op_type} node"
