"""Small ONNX models built node by node, shared by the import and control-flow tests."""
import numpy as np
from onnx import TensorProto, helper, numpy_helper


def make_model(nodes, inputs, outputs, initializers=(), opset=17, name="test"):
    """A model from helper nodes; inputs / outputs: (name, elem type, shape)."""
    graph = helper.make_graph(nodes, name, [helper.make_tensor_value_info(*i) for i in inputs],
                              [helper.make_tensor_value_info(*o) for o in outputs],
                              [numpy_helper.from_array(np.asarray(v), n) for n, v in initializers])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def if_model():
    """y = x * w if x0 > 0 else x - w: an If whose branches read the outer x and w by name."""
    branch = lambda op: helper.make_graph(  # noqa: E731
        [helper.make_node(op, ["x", "w"], ["out"])], op, [], [helper.make_tensor_value_info("out", 1, None)])
    nodes = [helper.make_node("Greater", ["x0", "zero"], ["positive"], name="test"),
             helper.make_node("If", ["positive"], ["y"], name="choose", then_branch=branch("Mul"),
                              else_branch=branch("Sub"))]
    return make_model(nodes, [("x0", TensorProto.FLOAT, []), ("x", TensorProto.FLOAT, [3])],
                      [("y", TensorProto.FLOAT, [3])], [("zero", np.float32(0)), ("w", np.float32([1, 2, 3]))])
