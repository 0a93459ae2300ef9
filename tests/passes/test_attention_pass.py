"""The attention pass: MatMul(q, kᵀ) → scale → Add(mask) → Softmax → MatMul(·, v) runs as one ScaledDotProductAttention
with the values of the ops it replaces, and only where nothing else reads, fetches or feeds an intermediate."""
import io
import math

import numpy as np
import pytest
import torch
from torch import nn

import tinyflow as tfl

from helpers import assert_close, op_types, run_both

pytestmark = pytest.mark.usefixtures("backend")  # kernels: run once per available backend

RNG = np.random.default_rng(0)


def hand_written(mask=True):
    """(q, k, v placeholders, scores, weights, y): attention as a user writes it, the scale after the product."""
    q, k, v = (tfl.Placeholder((2, 3, 6 if mask else None, 8), name=n) for n in "qkv")  # a mask fuses if it fits
    scores = tfl.matmul(q, tfl.transpose(k, (0, 1, 3, 2))) / math.sqrt(8)
    if mask:
        scores = scores + tfl.Constant(np.triu(np.full((6, 6), -1e9, np.float32), 1))
    weights = tfl.softmax(scores)
    return (q, k, v), scores, weights, tfl.matmul(weights, v)


def feed(inputs):
    return {x: RNG.standard_normal((2, 3, 6, 8)).astype(np.float32) for x in inputs}


@pytest.mark.parametrize("mask", [False, True])
def test_hand_written_attention_runs_as_one_op_with_the_values_of_the_five(mask):
    inputs, _, _, y = hand_written(mask)
    out, ref, plan = run_both(y, feed(inputs))
    assert [t for t in op_types(plan) if t != "Constant"] == ["ScaledDotProductAttention"]
    assert_close(out, ref, rtol=1e-5, atol=1e-6)


def test_attention_whose_weights_or_scores_have_another_reader_is_not_fused():
    inputs, scores, weights, y = hand_written()
    values = feed(inputs)
    for fetches in ([y, weights], [y + tfl.reduce_sum(scores)]):  # weights fetched; scores read by a sum
        out, ref, plan = run_both(fetches, values)
        assert "ScaledDotProductAttention" not in op_types(plan) and "Softmax" in op_types(plan)
        assert_close(out, ref, rtol=1e-5, atol=1e-5)


def test_a_mask_that_may_widen_the_scores_is_not_fused():
    q, k, v = (tfl.Placeholder((2, None, 8), name=n) for n in "qkv")  # L and S known only at run time
    weights = tfl.softmax(tfl.matmul(q, tfl.transpose(k, (0, 2, 1))) + tfl.Constant(np.zeros((6, 6), np.float32)))
    out, ref, plan = run_both(tfl.matmul(weights, v), {x: RNG.standard_normal((2, 6, 8)).astype(np.float32)
                                                      for x in (q, k, v)})
    assert "ScaledDotProductAttention" not in op_types(plan)
    assert_close(out, ref, rtol=1e-5, atol=1e-5)


def test_attention_over_mixed_dtypes_is_not_fused():
    q, k, v = tfl.Placeholder((2, 6, 8), "float64"), tfl.Placeholder((2, 6, 8)), tfl.Placeholder((2, 6, 8))
    y = tfl.matmul(tfl.softmax(tfl.matmul(q, tfl.transpose(k, (0, 2, 1))) * 0.5), v)  # q promotes the product
    out, ref, plan = run_both(y, {x: RNG.standard_normal((2, 6, 8)).astype(x.dtype) for x in (q, k, v)})
    assert "ScaledDotProductAttention" not in op_types(plan) and out.dtype == np.float64
    assert_close(out, ref)


def test_training_graph_keeps_the_softmax_its_gradient_reads():
    inputs, _, _, y = hand_written()
    grads = tfl.gradients(tfl.reduce_sum(y * y), list(inputs))
    out, ref, plan = run_both([y] + grads, feed(inputs))
    assert "ScaledDotProductAttention" not in op_types(plan)
    assert_close(out, ref, rtol=1e-5, atol=1e-5)


@pytest.mark.filterwarnings("ignore")  # the TorchScript exporter's deprecation and tracer notes
@pytest.mark.parametrize("causal", [False, True])
def test_imported_transformer_encoder_runs_each_layers_attention_as_one_op(causal):
    class Encoder(nn.Module):
        def __init__(self):
            super().__init__()
            layer = nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0, batch_first=True)
            self.encoder = nn.TransformerEncoder(layer, 3, enable_nested_tensor=False)

        def forward(self, x):
            mask = nn.Transformer.generate_square_subsequent_mask(x.shape[1]) if causal else None
            return self.encoder(x, mask=mask)

    torch.manual_seed(0)
    model, x = Encoder().eval(), torch.randn(3, 10, 16)
    exported = io.BytesIO()
    torch.onnx.export(model, (x,), exported, dynamo=False, opset_version=17, input_names=["x"], output_names=["y"])
    prog = tfl.onnx.load(exported.getvalue())
    y, x_node = prog.outputs["y"], prog.inputs["x"]
    out, ref, plan = run_both(y, {x_node: x.numpy()})
    unfused = tfl.Session(optimize={"attention": False})
    assert op_types(plan).count("ScaledDotProductAttention") == 3
    assert "Softmax" not in op_types(plan) and op_types(unfused.plan([y], {x_node})).count("Softmax") == 3
    assert_close(out, unfused.run(y, {x_node: x.numpy()}), rtol=1e-5, atol=1e-5)
    assert_close(out, model(x).detach().numpy(), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("mask", [None, "float", "bool"])
def test_exported_attention_imports_with_its_values_and_fuses_again(mask):
    q, k, v = (tfl.Placeholder((2, 3, 6, 8), name=n) for n in "qkv")
    masks = {"float": RNG.standard_normal((6, 6)).astype(np.float32), "bool": np.tril(np.ones((6, 6), bool))}
    y = tfl.nn.scaled_dot_product_attention(q, k, v, masks.get(mask), scale=0.3)
    values = feed((q, k, v))
    prog = tfl.onnx.load(tfl.onnx.export_graph([q, k, v], [y]))
    fed = {prog.inputs[x.name]: values[x] for x in (q, k, v)}
    out, ref, plan = run_both(prog.outputs[y.name], fed)
    assert ("ScaledDotProductAttention" in op_types(plan)) == (mask != "bool")  # a Where is not an added mask
    assert_close(out, tfl.Session().run(y, values), rtol=1e-5, atol=1e-6)
    assert_close(ref, out, rtol=1e-5, atol=1e-6)
