"""tfl.onnx.export: a traced program as an ONNX model (opset 17), with dynamic dimensions kept symbolic.

Each tinyflow op type maps to ONNX nodes through one small function in `_MAPPINGS`;
an op type without one raises OnnxExportError naming it. The program is traced in
evaluation mode, and nodes whose value is fixed there (the graph's training flag)
are folded away, so dropout disappears and batch norm becomes one BatchNormalization on its
moving statistics. Control flow maps to ONNX's own: tfl.cond -> If, tfl.while_loop -> Loop, with
the branches and loop bodies as subgraphs that read outer values by name.
"""
import numpy as np

from ..errors import TinyflowError
from ..nodes import Constant, Placeholder, Variable

OPSET = 17
IR_VERSION = 8  # the IR version of opset 17: readable by every onnxruntime that runs opset 17


class OnnxExportError(TinyflowError):
    """A program that cannot become ONNX (an op type without a mapping, or an attribute ONNX lacks)."""


def _onnx():
    try:
        import onnx
    except ImportError:
        raise OnnxExportError("tfl.onnx.export needs the `onnx` package: pip install onnx "
                              "(or pip install -e '.[dev]')") from None
    return onnx


class _Exporter:
    """Walks the program from its outputs and emits ONNX nodes, initializers, inputs and outputs."""

    def __init__(self, onnx, program, parent=None, names=None):
        self.onnx, self.helper = onnx, onnx.helper
        self.program = program
        self.nodes, self.initializers = [], []
        self.names = {**(parent.names if parent is not None else {}), **(names or {})}
        self.inputs = set(program.inputs)
        self._counter = parent._counter if parent is not None else [0]

    def fresh(self, hint):
        self._counter[0] += 1
        return f"{hint}__{self._counter[0]}"

    def subgraph(self, label, outputs, names=None, inputs=()):
        """An ONNX graph computing `outputs` that reads this graph's values by name (If / Loop bodies)."""
        sub = _Exporter(self.onnx, self.program, parent=self, names=names)
        results = []
        for out in outputs:
            name = sub.name_of(out)
            final = sub.fresh(f"{label}_out")  # a body output must be produced inside the body
            sub.nodes.append(self.helper.make_node("Identity", [name], [final], name=final))
            results.append(self.helper.make_tensor_value_info(final, _onnx_type(out.dtype), None))
        return self.helper.make_graph(sub.nodes, sub.fresh(label), list(inputs), results, sub.initializers)

    def emit(self, op_type, inputs, hint, **attrs):
        """Add one ONNX node; returns its output name."""
        out = self.fresh(hint)
        self.nodes.append(self.helper.make_node(op_type, list(inputs), [out], name=out, **attrs))
        return out

    def constant(self, array, hint):
        """An initializer holding `array`; returns its name."""
        from onnx import numpy_helper
        name = self.fresh(hint)
        self.initializers.append(numpy_helper.from_array(np.asarray(array), name=name))
        return name

    def static_value(self, node):
        """The value of a node fixed in evaluation mode (Constants, unfed defaulted Placeholders), else None."""
        if isinstance(node, Constant):
            return node.value
        if isinstance(node, Placeholder) and node not in self.inputs and node.default is not None:
            return node.default
        return None

    def name_of(self, node):
        """The ONNX value name computing `node` (emitting what it needs on first use)."""
        if node in self.names:
            return self.names[node]
        static = self.static_value(node)
        if node in self.inputs:
            name = node.name
        elif isinstance(node, Variable):
            name = self.constant(node.value, node.name)
        elif static is not None:
            name = self.constant(static, node.name)
        elif isinstance(node, Placeholder):
            raise OnnxExportError(f"Placeholder '{node.name}' is not an input of the exported program and has no "
                                  "default value; pass it as an argument of the exported function")
        else:
            mapping = _MAPPINGS.get(node.op_type)
            if mapping is None:
                raise OnnxExportError(
                    f"no ONNX mapping for op type '{node.op_type}' (node '{node.name}', created at "
                    f"{node.creation_site}). Ops that can be exported: {', '.join(sorted(_MAPPINGS))}.")
            name = mapping(self, node)
        self.names[node] = name
        return name

    def value_info(self, name, node, prefix):
        dims = [f"{prefix}_dim{i}" if d is None else d for i, d in enumerate(node.shape or ())]
        if node.shape is not None and node.shape and node.shape[0] is None:
            dims[0] = "batch"
        return self.helper.make_tensor_value_info(name, _onnx_type(node.dtype), dims if node.shape is not None else None)


def _onnx_type(dtype):
    from onnx import TensorProto
    table = {np.float32: TensorProto.FLOAT, np.float64: TensorProto.DOUBLE, np.int64: TensorProto.INT64,
             np.int32: TensorProto.INT32, np.bool_: TensorProto.BOOL, np.float16: TensorProto.FLOAT16}
    for numpy_type, onnx_type in table.items():
        if np.dtype(dtype) == np.dtype(numpy_type):
            return onnx_type
    raise OnnxExportError(f"dtype {dtype} has no ONNX equivalent here; cast to float32, float64, int64 or bool")


# ---------------------------------------------------------------- op mappings
def _same(onnx_type):
    """A mapping for ops that are one ONNX op on the same inputs."""
    return lambda ex, node: ex.emit(onnx_type, [ex.name_of(i) for i in node.inputs], onnx_type)


def _square(ex, node):
    x = ex.name_of(node.inputs[0])
    return ex.emit("Mul", [x, x], "Square")


def _multiply(ex, node):
    for i, inp in enumerate(node.inputs):  # x * dropout-mask in evaluation mode is x
        training = inp.training_input if inp.op_type == "DropoutMask" else None
        if training is not None and ex.static_value(training) is not None and not bool(ex.static_value(training)):
            return ex.name_of(node.inputs[1 - i])
    return ex.emit("Mul", [ex.name_of(i) for i in node.inputs], "Mul")


def _add(ex, node):
    """Add, or a whole inference-mode batch norm (tfl.nn.BatchNorm*d) as one BatchNormalization."""
    parts = _batch_norm_parts(ex, node)
    if parts is not None:
        x, weight, bias, mean, var, eps = parts
        return ex.emit("BatchNormalization", [ex.name_of(n) for n in (x, weight, bias, mean, var)],
                       "BatchNormalization", epsilon=eps)
    return ex.emit("Add", [ex.name_of(i) for i in node.inputs], "Add")


def _batch_norm_parts(ex, node):
    """(x, γ, β, moving mean, moving var, ε) if `node` is γ·(x - mean)/sqrt(var + ε) + β on 1-D Variables, else None.

    That is what tfl.nn.BatchNorm1d/2d build for evaluation (the training flag folded to False).
    """
    def variable(n):
        n = n.inputs[0] if n.op_type == "Reshape" and n.target[:2] == (1, -1) else None
        return n if isinstance(n, Variable) and n.shape is not None and len(n.shape) == 1 else None
    scaled, shift = node.inputs
    if scaled.op_type != "Multiply" or variable(shift) is None or variable(scaled.inputs[1]) is None:
        return None
    normalized = scaled.inputs[0]
    if normalized.op_type == "Where":
        flag = ex.static_value(normalized.inputs[0])
        if flag is None or np.ndim(flag) != 0 or bool(flag):
            return None
        normalized = normalized.inputs[2]
    if normalized.op_type != "Divide":
        return None
    centered, root = normalized.inputs
    if centered.op_type != "Subtract" or root.op_type != "Sqrt" or root.inputs[0].op_type != "Add":
        return None
    var_plus_eps = root.inputs[0]
    eps = ex.static_value(var_plus_eps.inputs[1])
    mean, var = variable(centered.inputs[1]), variable(var_plus_eps.inputs[0])
    x = centered.inputs[0]
    if mean is None or var is None or eps is None or np.size(eps) != 1 or x.shape is None or len(x.shape) < 2:
        return None
    return x, variable(scaled.inputs[1]), variable(shift), mean, var, float(np.asarray(eps).reshape(()))


def _output(ex, node):
    """One output of a cond or loop: the If / Loop emitted once for all its outputs."""
    names = ex.name_of(node.inputs[0])
    if node.index >= len(names):
        raise OnnxExportError(f"'{node.name}' reads output {node.index} of {node.inputs[0].op_type} "
                              f"'{node.inputs[0].name}' (its iteration count or a stack), which ONNX export lacks")
    return names[node.index]


def _cond(ex, node):
    """tfl.cond -> If: each branch a subgraph reading outer values by name; only one runs."""
    pred = ex.name_of(node.inputs[0])
    for capture in node.inputs[1:]:
        ex.name_of(capture)
    then_graph = ex.subgraph("then", node.true_branch.outputs)
    else_graph = ex.subgraph("else", node.false_branch.outputs)
    results = [ex.fresh("If") for _ in node.true_branch.outputs]
    ex.nodes.append(ex.helper.make_node("If", [pred], results, name=results[0], then_branch=then_graph,
                                        else_branch=else_graph))
    return results


def _while(ex, node):
    """tfl.while_loop -> Loop: the body computes the new loop variables, then the test on them."""
    initial = [ex.name_of(v) for v in node.inputs[:node.n_vars]]
    for capture in node.inputs[node.n_vars:]:
        ex.name_of(capture)
    loop_inputs = node.body.inputs
    start_test = _Exporter(ex.onnx, ex.program, parent=ex, names=dict(zip(loop_inputs, initial)))
    first = start_test.name_of(node.test.outputs[0])
    ex.nodes += start_test.nodes
    ex.initializers += start_test.initializers
    step, keep = ex.fresh("iteration"), ex.fresh("condition")
    carried = [ex.fresh("loop_var") for _ in loop_inputs]
    body = _Exporter(ex.onnx, ex.program, parent=ex, names=dict(zip(loop_inputs, carried)))
    new_values = [body.name_of(o) for o in node.body.outputs]
    test = _Exporter(ex.onnx, ex.program, parent=body, names=dict(zip(loop_inputs, new_values)))
    again = test.name_of(node.test.outputs[0])
    nodes, initializers = body.nodes + test.nodes, body.initializers + test.initializers
    outputs = []
    for name, var in zip([again] + new_values, [node.test.outputs[0]] + list(loop_inputs)):
        final = ex.fresh("body_out")
        nodes.append(ex.helper.make_node("Identity", [name], [final], name=final))
        outputs.append(ex.helper.make_tensor_value_info(final, _onnx_type(var.dtype), None))
    from onnx import TensorProto
    body_inputs = [ex.helper.make_tensor_value_info(step, TensorProto.INT64, []),
                   ex.helper.make_tensor_value_info(keep, TensorProto.BOOL, [])] + \
        [ex.helper.make_tensor_value_info(c, _onnx_type(v.dtype), None) for c, v in zip(carried, loop_inputs)]
    graph = ex.helper.make_graph(nodes, ex.fresh("loop_body"), body_inputs, outputs, initializers)
    limit = "" if node.maximum_iterations is None else ex.constant(np.array(node.maximum_iterations, np.int64),
                                                                    "max_trips")
    results = [ex.fresh("loop_result") for _ in loop_inputs]
    ex.nodes.append(ex.helper.make_node("Loop", [limit, first] + initial, results, name=results[0], body=graph))
    return results


def _leaky_relu(ex, node):
    return ex.emit("LeakyRelu", [ex.name_of(node.inputs[0])], "LeakyRelu", alpha=float(node.alpha))


def _softmax(onnx_type):
    return lambda ex, node: ex.emit(onnx_type, [ex.name_of(node.inputs[0])], onnx_type, axis=int(node.axis))


def _reduce(onnx_type):
    def mapping(ex, node):
        x = ex.name_of(node.inputs[0])
        keepdims = int(node.keepdims)
        if node.axes is None and node.axis is not None:
            raise OnnxExportError(f"{node.op_type} '{node.name}' reduces axis {node.axis} of an input of unknown "
                                  "rank; give the input a known rank")
        if node.axis is None:
            return ex.emit(onnx_type, [x], onnx_type, keepdims=keepdims)
        axes = [int(a) for a in node.axes]
        if onnx_type == "ReduceSum":  # opset 13+: axes are an input
            return ex.emit(onnx_type, [x, ex.constant(np.array(axes, np.int64), "axes")], onnx_type, keepdims=keepdims)
        return ex.emit(onnx_type, [x], onnx_type, axes=axes, keepdims=keepdims)
    return mapping


def _reshape(ex, node):
    shape = ex.constant(np.array(node.target, np.int64), "shape")
    return ex.emit("Reshape", [ex.name_of(node.inputs[0]), shape], "Reshape")


def _reshape_like(ex, node):
    shape = ex.emit("Shape", [ex.name_of(node.inputs[1])], "Shape")
    return ex.emit("Reshape", [ex.name_of(node.inputs[0]), shape], "Reshape")


def _transpose(ex, node):
    return ex.emit("Transpose", [ex.name_of(node.inputs[0])], "Transpose", perm=[int(a) for a in node.axes])


def _concat(ex, node):
    return ex.emit("Concat", [ex.name_of(i) for i in node.inputs], "Concat", axis=int(node.axis))


def _cast(ex, node):
    return ex.emit("Cast", [ex.name_of(node.inputs[0])], "Cast", to=_onnx_type(node.target_dtype))


def _where(ex, node):
    condition = ex.static_value(node.inputs[0])
    if condition is not None and np.ndim(condition) == 0:  # e.g. the training flag: fold the choice
        return ex.name_of(node.inputs[1] if bool(condition) else node.inputs[2])
    return ex.emit("Where", [ex.name_of(i) for i in node.inputs], "Where")


def _onnx_pads(node, spatial_kernel):
    """The op's padding as ONNX attributes: auto_pad for the modes, else pads [begin..., end...]."""
    if isinstance(node.padding, str):
        return {"auto_pad": node.padding.upper()}
    return {"pads": [p[0] for p in node.padding] + [p[1] for p in node.padding]}


def _conv(ex, node):
    w = node.inputs[1]
    return ex.emit("Conv", [ex.name_of(node.inputs[0]), ex.name_of(w)], "Conv", kernel_shape=list(w.shape[2:]),
                   strides=list(node.stride), dilations=list(node.dilation), group=node.groups,
                   **_onnx_pads(node, w.shape[2:]))


def _pool(onnx_type):
    def mapping(ex, node):
        extra = {"count_include_pad": int(node.count_include_pad)} if onnx_type == "AveragePool" else {}
        if any(d != 1 for d in node.dilation):
            if onnx_type == "AveragePool":  # AveragePool has dilations from opset 19 on
                raise OnnxExportError(f"AvgPool '{node.name}' is dilated {node.dilation}; opset {OPSET}'s "
                                      "AveragePool has no dilations")
            extra["dilations"] = list(node.dilation)
        return ex.emit(onnx_type, [ex.name_of(node.inputs[0])], onnx_type, kernel_shape=list(node.kernel),
                       strides=list(node.stride), ceil_mode=int(node.ceil_mode), **_onnx_pads(node, node.kernel),
                       **extra)
    return mapping


def _softplus(ex, node):
    return ex.emit("Softplus", [ex.name_of(node.inputs[0])], "Softplus")


def _like(value):
    def mapping(ex, node):
        shape = ex.emit("Shape", [ex.name_of(node.inputs[0])], "Shape")
        fill = ex.helper.make_tensor("value", _onnx_type(node.dtype), [1], [value])
        return ex.emit("ConstantOfShape", [shape], "Fill", value=fill)
    return mapping


_MAPPINGS = {
    "Add": _add, "Subtract": _same("Sub"), "Multiply": _multiply, "Divide": _same("Div"),
    "Power": _same("Pow"), "Maximum": _same("Max"), "Minimum": _same("Min"), "Negative": _same("Neg"),
    "Square": _square, "Sqrt": _same("Sqrt"), "Exp": _same("Exp"), "Log": _same("Log"), "Abs": _same("Abs"),
    "Sign": _same("Sign"), "Sigmoid": _same("Sigmoid"), "Tanh": _same("Tanh"), "Relu": _same("Relu"),
    "LeakyRelu": _leaky_relu, "Softplus": _softplus, "MatMul": _same("MatMul"),
    "Softmax": _softmax("Softmax"), "LogSoftmax": _softmax("LogSoftmax"),
    "ReduceSum": _reduce("ReduceSum"), "ReduceMean": _reduce("ReduceMean"), "ReduceMax": _reduce("ReduceMax"),
    "Reshape": _reshape, "ReshapeLike": _reshape_like, "Transpose": _transpose, "Concat": _concat,
    "Identity": _same("Identity"), "StopGradient": _same("Identity"), "AddN": _same("Sum"), "Cast": _cast,
    "Where": _where, "Greater": _same("Greater"), "GreaterEqual": _same("GreaterOrEqual"), "Less": _same("Less"),
    "LessEqual": _same("LessOrEqual"), "Equal": _same("Equal"), "ZerosLike": _like(0), "OnesLike": _like(1),
    "Conv": _conv, "MaxPool": _pool("MaxPool"), "AvgPool": _pool("AveragePool"),
    "Cond": _cond, "WhileLoop": _while, "Output": _output,
}


def export(layer_or_fn, path, input_spec=None, opset=OPSET):
    """Trace `layer_or_fn` (evaluation mode) and write an ONNX model to `path`; returns the onnx.ModelProto."""
    onnx = _onnx()
    if opset != OPSET:
        raise OnnxExportError(f"tinyflow exports opset {OPSET} only (asked for {opset})")
    from ..jit.save_load import _program_of
    program = _program_of(layer_or_fn, input_spec)
    outputs = [o for o in program.outputs]
    if any(not hasattr(o, "op_type") for o in outputs):
        raise OnnxExportError(f"{program.fn_name} returns Python values; ONNX models return tensors only")
    ex = _Exporter(onnx, program)
    output_names = []
    for i, out in enumerate(outputs):
        name = ex.name_of(out)
        final = f"output{i}" if len(outputs) > 1 else "output"
        ex.nodes.append(ex.helper.make_node("Identity", [name], [final], name=f"{final}_identity"))
        output_names.append((final, out))
    graph = ex.helper.make_graph(
        ex.nodes, program.fn_name or "tinyflow",
        [ex.value_info(p.name, p, p.name.replace("/", "_")) for p in program.inputs],
        [ex.value_info(name, node, name) for name, node in output_names], ex.initializers)
    model = ex.helper.make_model(graph, opset_imports=[ex.helper.make_opsetid("", OPSET)],
                                 producer_name="tinyflow")
    model.ir_version = IR_VERSION
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return model
