"""Control flow: tfl.cond <-> If, tfl.while_loop <-> Loop, branches and bodies being subgraphs reading outer values by
name (an import rule builds one with `ctx.import_graph(graph_proto, inputs)`). ONNX's Loop carries an iteration
number and a condition besides its loop variables; its body's *scan outputs* (one value per iteration, stacked) are
the values tinyflow's while_loop records on a stack, as a list appended to in a converted loop: both ways.
"""
import numpy as np

from ... import ops
from ...control_flow.cond import cond
from ...control_flow.stacks import StackToTensor
from ...control_flow.while_loop import WhileLoop, trace_loop
from ...graph import get_default_graph
from ...nodes import Constant
from ...errors import OnnxExportError
from ..storage_types import onnx_type
from .rule_tables import exports, imports


# ---------------------------------------------------------------- import
def _scalar(node):
    """A one-element condition or count as a scalar node (ONNX allows shape [1])."""
    return node if node.shape == () else ops.reshape(node, ())


@imports("If")
def import_if(ctx, node):
    """tfl.cond over the two branches; a condition known at import time imports only the branch it picks."""
    then_graph, else_graph = ctx.attr("then_branch"), ctx.attr("else_branch")
    if len(then_graph.output) != len(else_graph.output):
        raise ctx.fail(f"its then branch returns {len(then_graph.output)} value(s) and its else branch "
                       f"{len(else_graph.output)}")
    known = ctx.value(0)
    if known is not None:
        if known.size != 1:
            raise ctx.fail(f"its condition holds {known.size} values; it must hold one")
        return ctx.import_graph(then_graph if bool(known.reshape(())) else else_graph)
    pred = _scalar(ctx.input(0))
    return cond(pred, lambda: ctx.import_graph(then_graph), lambda: ctx.import_graph(else_graph), name=ctx.name or "If")


@imports("Loop")
def import_loop(ctx, node):
    """A while_loop over (iteration, condition, loop variables...); scan outputs are values it records.

        i, c = 0, cond                       # cond omitted: true
        while (M omitted or i < M) and c:
            c, v..., scans... = body(i, c, v...)
            i += 1
    """
    body_graph = ctx.attr("body")
    n_vars = ctx.num_inputs - 2
    if len(body_graph.input) != n_vars + 2 or len(body_graph.output) < 1 + n_vars:
        raise ctx.fail(f"its body takes {len(body_graph.input)} inputs and returns {len(body_graph.output)} "
                       f"values for {n_vars} loop variable(s); it must take 2 + {n_vars} and return at least "
                       f"1 + {n_vars}")
    trip = _scalar(ctx.input(0)) if ctx.has_input(0) else None
    keep = _scalar(ctx.input(1)) if ctx.has_input(1) else Constant(np.array(True))
    initial = [ctx.input(2 + k) for k in range(n_vars)]
    scans = []  # the body's scan values, found when the body is traced

    def test(i, going, *_):
        return going if trip is None else ops.logical_and(ops.less(i, ops.cast(trip, np.int64)), going)

    def body(i, going, *values):
        outputs = ctx.import_graph(body_graph, [i, going, *values])
        scans.extend(outputs[1 + n_vars:])
        return [i + np.int64(1), _scalar(outputs[0])] + list(outputs[1:1 + n_vars])

    start = [Constant(np.array(0, np.int64)), keep] + initial
    with get_default_graph().name_scope(ctx.name or "Loop") as scope:
        test_graph, body_graph_traced = trace_loop(test, body, start, scope, also=lambda: scans)
        loop = WhileLoop(start, test_graph, body_graph_traced, name="While")
        finals = [loop.output(2 + k) for k in range(n_vars)]
        stacked = []
        for k, value in enumerate(scans):
            stack = loop.output(loop.stack_index(loop.record(value)), name=f"scan{k}")
            stacked.append(StackToTensor(stack, value.shape, value.dtype, name=f"scan_output{k}"))
    return tuple(finals + stacked)


# ---------------------------------------------------------------- export
@exports("Output")
def export_output(ex, node):
    """One output of a cond or loop: the If / Loop emitted once for all its outputs."""
    names = ex.name_of(node.inputs[0])
    if node.index >= len(names) or names[node.index] is None:
        raise OnnxExportError(f"'{node.name}' reads output {node.index} of {node.inputs[0].op_type} "
                              f"'{node.inputs[0].name}', a stack its gradient reads; ONNX has no stacks (export the "
                              "forward program: what a loop collects for a list exports as a Loop scan output)")
    return names[node.index]


exports("StackToTensor")(lambda ex, node: ex.name_of(node.inputs[0]))  # a loop's stack: its scan output


@exports("Cond")
def export_cond(ex, node):
    """tfl.cond -> If: each branch a subgraph reading outer values by name; only one runs."""
    pred = [ex.name_of(i) for i in node.inputs][0]  # the captured values first named outside the branches
    then_graph = ex.subgraph("then", node.true_branch.outputs)
    else_graph = ex.subgraph("else", node.false_branch.outputs)
    results = [ex.fresh("If") for _ in node.true_branch.outputs]
    ex.emit("If", [pred], "If", results, then_branch=then_graph, else_branch=else_graph)
    return results


@exports("WhileLoop")
def export_while(ex, node):
    """tfl.while_loop -> Loop: the body computes the new loop variables, then the test on them; a read iteration count
    is one more loop-carried value, values recorded for a list (read by StackToTensor) the Loop's scan outputs."""
    initial = [ex.name_of(v) for v in node.inputs][:node.n_vars]  # the captured values named outside the body
    outputs_read = [c for c in node.consumers if getattr(c, "output_index", None) is not None]
    scanned = {c.output_index for c in outputs_read if any(s.op_type == "StackToTensor" for s in c.consumers)}
    scans = [j for j in range(len(node.recorded)) if node.stack_index(j) in scanned]  # stacks read as tensors
    count = node.iterations_index in {c.output_index for c in outputs_read}
    loop_inputs = node.body.inputs
    first = ex.child(dict(zip(loop_inputs, initial)), shared=True).name_of(node.test.outputs[0])
    step, keep, carried = ex.fresh("iteration"), ex.fresh("condition"), [ex.fresh("loop_var") for _ in loop_inputs]
    body = ex.child(dict(zip(loop_inputs, carried)))
    new_values = [body.name_of(o) for o in node.body.outputs]
    scan_values = [body.name_of(node.recorded[j].node) for j in scans]
    values = [body.child(dict(zip(loop_inputs, new_values)), shared=True).name_of(node.test.outputs[0])] + new_values
    # the body's inputs (name, dtype, shape): iteration number, condition, loop variables; [1:]: its outputs' types
    body_inputs = [(step, np.int64, []), (keep, np.bool_, [])] + [(c, v.dtype, None)
                                                                  for c, v in zip(carried, loop_inputs)]
    if count:  # the number of iterations run: step + 1 after each one
        body_inputs.append((ex.fresh("count"), np.int64, []))
        values.append(body.emit("Add", [step, ex.constant(np.array(1, np.int64), "one")], "count_next"))
        initial = initial + [ex.constant(np.array(0, np.int64), "count_start")]
    graph = body.graph("loop_body", values + scan_values,
                       [t for _, t, _ in body_inputs[1:]] + [node.recorded[j].node.dtype for j in scans],
                       [ex.helper.make_tensor_value_info(n, onnx_type(t), shape) for n, t, shape in body_inputs])
    limit = "" if node.maximum_iterations is None else ex.constant(np.array(node.maximum_iterations, np.int64),
                                                                    "max_trips")
    finals = [ex.fresh("loop_result") for _ in loop_inputs] + [ex.fresh("iterations") if count else None]
    scan_names = [ex.fresh("scan") if j in scans else None for j in range(len(node.recorded))]
    ex.emit("Loop", [limit, first] + initial, "Loop", [n for n in finals + scan_names if n], body=graph)
    return finals + scan_names


@exports("Length")
def export_length(ex, node):
    """len(x) of a converted tensor loop: the first entry of x's shape, as a scalar."""
    first = ex.emit("Shape", [ex.name_of(node.inputs[0])], "Shape", start=0, end=1)
    return ex.emit("Reshape", [first, ex.constant(np.zeros(0, np.int64), "scalar")], "Length")
