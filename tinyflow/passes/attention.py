"""Attention: MatMul(q, kᵀ) → scale → Add(mask) → Softmax(last axis) → MatMul(·, v) becomes one
ScaledDotProductAttention node, so a backend keeps each block of scores in cache instead of passing (L, S) four times.

Rule: MatMul(Softmax(scores, last axis), v), scores an optional Add of a mask (not widening them) to MatMul(a, b)
scaled by scalar constants, a = q and b = kᵀ (a Transpose of the last two axes) each scaled too, as torch's ONNX
exporter writes it. Each intermediate read by the next op only, not fetched or fed (training graphs keep their ops).
"""
from ..ops.attention import ScaledDotProductAttention
from .ir import broadcasts_into, make_node, scalar_constant


def fuse_attention(graph):
    """A copy of `graph` with each attention pattern as one ScaledDotProductAttention node; (graph, counts)."""
    graph = graph.copy()
    consumers = graph.consumers()

    def unscaled(node, reader):
        """(x, factor): node is x times `factor` through Multiply / Divide by scalar constants read only in turn."""
        factor = 1.0
        while node.op_type in ("Multiply", "Divide") and graph.only_read_by(node, reader, consumers):
            constants = [scalar_constant(x, node) for x in node.inputs]
            if constants[1] is not None:
                factor = factor * constants[1] if node.op_type == "Multiply" else factor / constants[1]
                node, reader = node.inputs[0], node
            elif constants[0] is not None and node.op_type == "Multiply":
                factor, node, reader = factor * constants[0], node.inputs[1], node
            else:
                break
        return node, reader, factor

    def rule(node):
        weights = node.inputs[0] if node.op_type == "MatMul" else None
        if weights is None or weights.op_type != "Softmax" or weights.axis != len(weights.shape or ()) - 1 \
                or not graph.only_read_by(weights, node, consumers):
            return None
        scores, reader, mask = weights.inputs[0], weights, ()
        if scores.op_type == "Add" and graph.only_read_by(scores, weights, consumers):
            for position, summand in enumerate(scores.inputs):
                other = scores.inputs[1 - position]  # the mask: added, not widening scores, of their dtype
                if unscaled(summand, scores)[0].op_type == "MatMul" and other.dtype == scores.dtype \
                        and broadcasts_into(other.shape, summand.shape):
                    mask, reader, scores = (other,), scores, summand
                    break
        product, reader, scale = unscaled(scores, reader)
        if product.op_type != "MatMul" or not graph.only_read_by(product, reader, consumers):
            return None
        q, _, q_factor = unscaled(product.inputs[0], product)
        k_transposed, transpose_reader, k_factor = unscaled(product.inputs[1], product)
        rank = len(k_transposed.shape or ())
        if k_transposed.op_type != "Transpose" or k_transposed.axes != (*range(rank - 2), rank - 1, rank - 2) \
                or not graph.only_read_by(k_transposed, transpose_reader, consumers):
            return None
        inputs = (q, k_transposed.inputs[0], node.inputs[1])
        if any(x.dtype != node.dtype for x in inputs) or node.dtype.kind != "f":  # the op's q, k, v: one float dtype
            return None
        return make_node(ScaledDotProductAttention, inputs + mask, node, scale=scale * q_factor * k_factor)

    graph.rewrite(rule, fresh=True)
    return graph, {"fused_attention": sum(isinstance(node, ScaledDotProductAttention) for node in graph.nodes)}
