"""Control flow: tfl.cond <-> If, tfl.while_loop <-> Loop, with branches and bodies as subgraphs.

Subgraphs read outer values by name, in both directions. An import rule builds a branch or body
with `ctx.import_graph(graph_proto, inputs)` inside the function tfl.cond / tfl.while_loop trace.
"""
import numpy as np

from ..dtypes import onnx_type
from ..errors import OnnxExportError
from . import exports


@exports("Output")
def export_output(ex, node):
    """One output of a cond or loop: the If / Loop emitted once for all its outputs."""
    names = ex.name_of(node.inputs[0])
    if node.index >= len(names):
        raise OnnxExportError(f"'{node.name}' reads output {node.index} of {node.inputs[0].op_type} "
                              f"'{node.inputs[0].name}' (its iteration count or a stack), which ONNX export lacks")
    return names[node.index]


@exports("Cond")
def export_cond(ex, node):
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


@exports("WhileLoop")
def export_while(ex, node):
    """tfl.while_loop -> Loop: the body computes the new loop variables, then the test on them."""
    initial = [ex.name_of(v) for v in node.inputs[:node.n_vars]]
    for capture in node.inputs[node.n_vars:]:
        ex.name_of(capture)
    loop_inputs = node.body.inputs
    start_test = ex.child(dict(zip(loop_inputs, initial)))
    first = start_test.name_of(node.test.outputs[0])
    ex.nodes += start_test.nodes
    ex.initializers += start_test.initializers
    step, keep = ex.fresh("iteration"), ex.fresh("condition")
    carried = [ex.fresh("loop_var") for _ in loop_inputs]
    body = ex.child(dict(zip(loop_inputs, carried)))
    new_values = [body.name_of(o) for o in node.body.outputs]
    test = body.child(dict(zip(loop_inputs, new_values)))
    again = test.name_of(node.test.outputs[0])
    nodes, initializers = body.nodes + test.nodes, body.initializers + test.initializers
    outputs = []
    for name, var in zip([again] + new_values, [node.test.outputs[0]] + list(loop_inputs)):
        final = ex.fresh("body_out")
        nodes.append(ex.helper.make_node("Identity", [name], [final], name=final))
        outputs.append(ex.helper.make_tensor_value_info(final, onnx_type(var.dtype), None))
    from onnx import TensorProto
    body_inputs = [ex.helper.make_tensor_value_info(step, TensorProto.INT64, []),
                   ex.helper.make_tensor_value_info(keep, TensorProto.BOOL, [])] + \
        [ex.helper.make_tensor_value_info(c, onnx_type(v.dtype), None) for c, v in zip(carried, loop_inputs)]
    graph = ex.helper.make_graph(nodes, ex.fresh("loop_body"), body_inputs, outputs, initializers)
    limit = "" if node.maximum_iterations is None else ex.constant(np.array(node.maximum_iterations, np.int64),
                                                                    "max_trips")
    results = [ex.fresh("loop_result") for _ in loop_inputs]
    ex.nodes.append(ex.helper.make_node("Loop", [limit, first] + initial, results, name=results[0], body=graph))
    return results
