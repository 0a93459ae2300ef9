"""One table of test cases per op type: how to build it and on what inputs (float64).

The registry-driven tests walk this table: finite-difference gradient checks,
static shape/dtype inference against the computed value, and backend parity.
An op type added to tinyflow without a case here makes the suite fail.
"""
from collections import namedtuple

import numpy as np

import tinyflow as tfl
from tinyflow.ops.cross_entropy import SoftmaxCrossEntropyGrad
from tinyflow.ops.elementwise_ops import GRADIENT_OPS
from tinyflow.ops.array_ops import ConcatSplit, GetItemGrad, GetItemGrads, ReshapeLike, normalize_key
from tinyflow.ops.broadcasting import BroadcastLike, SumToShapeOf
from tinyflow.control_flow import cond, while_loop
from tinyflow.control_flow.stacks import StackToTensor, TensorToStack
from tinyflow.ops.conv import ConvBackFilter, ConvBackInput
from tinyflow.ops.indexing import GatherGrad, TakeAlongAxisGrad
from tinyflow.ops.normalization import LayerNorm, LayerNormGrad
from tinyflow.ops.pad import PadGrad
from tinyflow.ops.recurrent_cells import Recurrence, RecurrenceGrad
from tinyflow.ops.pooling import AvgPoolGrad, MaxPoolGather, MaxPoolGrad
from tinyflow.ops.reductions import CumProd, CumSum, ExpandReduced, ProdOfOthers
from tinyflow.ops.resize import Resize, ResizeGrad
from tinyflow.ops.runtime_shapes import RuntimeSlice, RuntimeSliceGrad
from tinyflow.ops.array_ops import ReshapeTo
from tinyflow.ops.shape_ops import TileGrad
from tinyflow.ops.softmax import LogSoftmaxGrad, SoftmaxGrad
from tinyflow.ops.elementwise_ops import Cast

Case = namedtuple("Case", "build inputs options")
_rng = np.random.default_rng(20261121)


def normal(*shape):
    """Standard normal values."""
    return _rng.standard_normal(shape)


def positive(*shape):
    """Values in [0.5, ∞): safe for log, sqrt, division and powers."""
    return np.abs(_rng.standard_normal(shape)) + 0.5


def off_zero(*shape):
    """Normal values pushed at least 0.1 away from 0 (the kink of relu, abs, leaky_relu)."""
    x = _rng.standard_normal(shape)
    return x + 0.1 * np.sign(x)


def distinct(*shape):
    """Values at least 0.1 apart, so a finite-difference step never changes which one is largest."""
    return (_rng.permutation(int(np.prod(shape))).reshape(shape) * 0.1 + 0.01 * _rng.random(shape))


def probabilities(*shape):
    """Values in (0, 1), like a sigmoid's output."""
    return 1 / (1 + np.exp(-_rng.standard_normal(shape)))


def case(build, *inputs, **options):
    """A case: `build(*placeholders) -> node` and the input arrays; options go to gradcheck."""
    return Case(build, tuple(np.asarray(v) for v in inputs), options)


CASES = {
    # elementwise binary, with broadcasting of every kind
    "Add": [case(tfl.add, normal(3, 4), normal(3, 4)), case(tfl.add, normal(3, 4), normal(4)),
            case(tfl.add, normal(2, 1, 3), normal(4, 1)), case(lambda a: a + 2.0, normal(5)),
            case(tfl.add, normal(1), normal(1))],
    "Subtract": [case(tfl.subtract, normal(3, 4), normal(3, 1)), case(lambda a: 1.0 - a, normal(2, 3))],
    "Multiply": [case(tfl.multiply, normal(3, 4), normal(4)), case(tfl.multiply, normal(), normal(2, 3)),
                 case(lambda a: a * a, normal(5))],
    "Divide": [case(tfl.divide, normal(3, 4), positive(3, 1)), case(lambda a: 2.0 / a, positive(4))],
    "Power": [case(tfl.power, positive(3, 4), normal(3, 4)), case(lambda a: a ** 3.0, normal(5)),
              case(tfl.power, positive(2, 3), normal(3))],
    "Maximum": [case(tfl.maximum, distinct(3, 4), distinct(3, 4) + 0.05), case(tfl.maximum, off_zero(3, 4), np.zeros(1))],
    "Minimum": [case(tfl.minimum, distinct(3, 4), distinct(4) + 0.05)],
    # elementwise unary
    "Negative": [case(tfl.negative, normal(3, 4))],
    "Square": [case(tfl.square, normal(3, 4))],
    "Sqrt": [case(tfl.sqrt, positive(3, 4))],
    "Exp": [case(tfl.exp, normal(3, 4))],
    "Log": [case(tfl.log, positive(3, 4))],
    "Abs": [case(tfl.abs, off_zero(3, 4))],
    "Sign": [case(tfl.sign, off_zero(3, 4))],
    "Reciprocal": [case(tfl.reciprocal, off_zero(3, 4))],
    "Floor": [case(tfl.floor, normal(3, 4) * 3)],
    "Ceil": [case(tfl.ceil, normal(3, 4) * 3)],
    "Sin": [case(tfl.sin, normal(3, 4) * 2)],
    "Cos": [case(tfl.cos, normal(3, 4) * 2)],
    "Erf": [case(tfl.erf, normal(3, 4))],
    "Mod": [case(tfl.mod, normal(3, 4) * 3, off_zero(4))],
    "Fmod": [case(tfl.fmod, normal(3, 4) * 3, off_zero(3, 1))],
    "FloorDivide": [case(tfl.floor_divide, normal(3, 4) * 3, off_zero(4)), case(lambda a: 7.0 // a % 2.0, off_zero(5))],
    "Clip": [case(lambda x: tfl.clip(x, -0.5, 0.5), normal(3, 4)), case(lambda x: tfl.clip(x, min=0.0), off_zero(5)),
             case(tfl.clip, normal(3, 4), normal(4) - 0.5, normal(3, 1) + 0.5)],
    "Cast": [case(lambda a: Cast(Cast(a, "float32"), "float64"), normal(3, 4), eps=1e-2, rtol=1e-3, atol=1e-4)],
    "Where": [case(lambda c, a, b: tfl.where(c, a, b), normal(3, 4) > 0, normal(3, 4), normal(4))],
    # activations (their gradient ops get cases of their own at the end)
    "Sigmoid": [case(tfl.sigmoid, normal(3, 4) * 3)],
    "Tanh": [case(tfl.tanh, normal(3, 4))],
    "Relu": [case(tfl.relu, off_zero(3, 4))],
    "LeakyRelu": [case(lambda a: tfl.leaky_relu(a, 0.2), off_zero(3, 4))],
    "Softplus": [case(tfl.softplus, normal(3, 4) * 3)],
    "Elu": [case(tfl.elu, off_zero(3, 4)), case(lambda x: tfl.selu(x), off_zero(2, 3))],
    "Gelu": [case(tfl.gelu, normal(3, 4) * 2)],
    "GeluTanh": [case(lambda x: tfl.gelu(x, approximate="tanh"), normal(3, 4) * 2)],
    "Softsign": [case(tfl.softsign, normal(3, 4) * 2)],
    "PRelu": [case(tfl.prelu, off_zero(3, 4), normal(4)), case(tfl.prelu, off_zero(2, 3, 2, 2), normal(3, 1, 1))],
    "Silu": [case(tfl.silu, normal(3, 4) * 3)],
    "Hardtanh": [case(tfl.hardtanh, off_zero(3, 4) * 2), case(lambda x: tfl.hardtanh(x, -0.5, 2.0), off_zero(5))],
    # matrices, reductions, softmax
    "MatMul": [case(tfl.matmul, normal(3, 4), normal(4, 2)), case(tfl.matmul, normal(2, 3, 4), normal(4, 5)),
               case(tfl.matmul, normal(1, 1), normal(1, 3)), case(tfl.matmul, normal(2, 1, 2, 3), normal(4, 3, 2)),
               case(tfl.matmul, normal(3), normal(3, 2)), case(tfl.matmul, normal(2, 3, 4), normal(4)),
               case(tfl.matmul, normal(4), normal(4)),
               # a weight times a batch, and a batch times a weight: the weight's gradient is one product
               case(tfl.matmul, normal(2, 3, 2, 4), normal(4, 3)), case(tfl.matmul, normal(2, 4), normal(3, 2, 4, 3))],
    "ReduceSum": [case(tfl.reduce_sum, normal(3, 4)), case(lambda a: tfl.reduce_sum(a, 1), normal(3, 4)),
                  case(lambda a: tfl.reduce_sum(a, (0, 2), keepdims=True), normal(2, 3, 4))],
    "ReduceMean": [case(tfl.reduce_mean, normal(3, 4)), case(lambda a: tfl.reduce_mean(a, -1, True), normal(3, 4))],
    "ReduceMax": [case(lambda a: tfl.reduce_max(a, 1), distinct(3, 4)), case(tfl.reduce_max, distinct(2, 3))],
    "ReduceMin": [case(lambda a: tfl.reduce_min(a, 0), distinct(3, 4)), case(tfl.reduce_min, distinct(2, 3))],
    "ReduceProd": [case(lambda a: tfl.reduce_prod(a, 1), off_zero(3, 4)),
                   case(lambda a: tfl.reduce_prod(a, (1, 2), keepdims=True), off_zero(2, 3, 2))],
    "ProdOfOthers": [case(lambda a: ProdOfOthers(a, (1,)), off_zero(3, 4)), case(lambda a: ProdOfOthers(a, None), off_zero(2, 3))],
    "ReduceLogSumExp": [case(lambda a: tfl.reduce_logsumexp(a, 1), normal(3, 4) * 3),
                        case(lambda a: tfl.reduce_logsumexp(a, (0, 2), keepdims=True), normal(2, 3, 2))],
    "CumSum": [case(lambda a: tfl.cumsum(a, 1), normal(3, 4)), case(lambda a: CumSum(a, 0, reverse=True), normal(3, 2))],
    "CumProd": [case(lambda a: tfl.cumprod(a, 1), off_zero(3, 4)), case(lambda a: CumProd(a, 0, reverse=True),
                                                                        off_zero(4, 2))],
    "ExpandReduced": [case(lambda g, x: ExpandReduced(g, x, (1,), False, True), normal(3), normal(3, 4)),
                      case(lambda g, x: ExpandReduced(g, x, (0, 1), True, False), normal(1, 1), normal(3, 4))],
    "Softmax": [case(tfl.softmax, normal(3, 5)), case(lambda a: tfl.softmax(a, axis=0), normal(3, 5))],
    "LogSoftmax": [case(tfl.log_softmax, normal(3, 5)), case(lambda a: tfl.log_softmax(a, 0), normal(4, 2))],
    "SoftmaxGrad": [case(lambda y, g: SoftmaxGrad(y, g, axis=-1), probabilities(3, 4),
                         normal(3, 4))],
    "LogSoftmaxGrad": [case(lambda y, g: LogSoftmaxGrad(y, g, axis=-1), -positive(3, 4), normal(3, 4))],
    "ScaledDotProductAttention": [case(tfl.nn.scaled_dot_product_attention, normal(2, 3, 4), normal(2, 5, 4),
                                       normal(2, 5, 3)),
                                  case(lambda q, k, v, m: tfl.nn.scaled_dot_product_attention(q, k, v, m, scale=0.6),
                                       normal(1, 4, 2), normal(1, 3, 2), normal(1, 3, 2), normal(4, 3))],
    # shapes
    "Reshape": [case(lambda a: tfl.reshape(a, (4, -1)), normal(2, 6)), case(lambda a: tfl.reshape(a, (6,)), normal(2, 3))],
    "ReshapeTo": [case(tfl.reshape, normal(2, 6), np.array([3, -1])),
                  case(lambda x, s: ReshapeTo(x, s, allowzero=False), normal(2, 6), np.array([0, -1, 2]))],
    "RuntimeSlice": [case(lambda x, s, e: RuntimeSlice(x, s, e, (0, -1), (1, -2)), normal(4, 5), np.array([1, -1]),
                          np.array([3, -9])),
                     case(lambda x, s, e: RuntimeSlice(x, s, e, (1,)), normal(2, 6), np.array([2]), np.array([99]))],
    "RuntimeSliceGrad": [case(lambda g, x, s, e: RuntimeSliceGrad(g, x, s, e, (1,), (2,)), normal(3, 2), normal(3, 4),
                              np.array([0]), np.array([4]))],
    "ExpandTo": [case(tfl.expand, normal(3, 1), np.array([2, 3, 4])), case(tfl.expand, normal(2, 3), np.array([1, 3]))],
    "ReshapeLike": [case(ReshapeLike, normal(2, 6), normal(3, 4))],
    "Transpose": [case(tfl.transpose, normal(2, 3)), case(lambda a: tfl.transpose(a, (1, 2, 0)), normal(2, 3, 4))],
    "Concat": [case(lambda a, b: tfl.concat([a, b], 1), normal(2, 3), normal(2, 2)),
               case(lambda a, b, c: tfl.concat([a, b, c], 0), normal(1, 3), normal(2, 3), normal(3, 3)),
               case(lambda a, b: tfl.stack([a, b], axis=1), normal(2, 3), normal(2, 3))],
    "ConcatSplit": [case(lambda g, a, b: ConcatSplit(g, [a, b], 1, 1), normal(2, 5), normal(2, 2), normal(2, 3))],
    "GetItem": [case(lambda a: a[1:3], normal(4, 3)), case(lambda a: a[:, 0], normal(4, 3)),
                case(lambda a: a[np.array([0, 2, 0])], normal(4, 3)), case(lambda a: a[..., None, ::2], normal(2, 5)),
                case(lambda a: tfl.split(a, [1, 3], axis=1)[1], normal(2, 4)), case(lambda a: a[3:0:-2, ::-1], normal(5, 2))],
    "GetItemGrad": [case(lambda g, x: GetItemGrad(g, x, normalize_key((slice(1, 3), 0))), normal(2), normal(4, 3)),
                    case(lambda g, x: GetItemGrad(g, x, normalize_key(np.array([0, 2, 0]))), normal(3, 3), normal(4, 3))],
    "GetItemGrads": [case(lambda g, x, h: GetItemGrads(g, x, h, keys=[normalize_key(1), normalize_key(([1, 1],))]),
                          normal(3), normal(4, 3), normal(2, 3))],  # overlapping keys
    "Identity": [case(tfl.identity, normal(3, 4))],
    "Squeeze": [case(lambda a: tfl.squeeze(a, 1), normal(3, 1, 4)), case(lambda a: tfl.squeeze(a, (-1, 1)), normal(2, 1, 1))],
    "Unsqueeze": [case(lambda a: tfl.unsqueeze(a, 1), normal(3, 4)), case(lambda a: tfl.unsqueeze(a, (0, -1)), normal(3))],
    "Flatten": [case(lambda a: tfl.flatten(a, 1), normal(2, 3, 4)), case(lambda a: tfl.flatten(a, 0, 1), normal(2, 3, 4))],
    "BroadcastTo": [case(lambda a: tfl.expand(a, (2, 3, 4)), normal(3, 1)), case(lambda a: tfl.broadcast_to(a, (3, 4)), normal(4)),
                    case(lambda a: tfl.expand(a, (1, 5)), normal(3, 1))],
    "Tile": [case(lambda a: tfl.tile(a, (2, 3)), normal(3, 2)), case(lambda a: tfl.tile(a, (2, 1, 2)), normal(2, 3))],
    "TileGrad": [case(lambda g, a: TileGrad(g, a, (2, 1, 2)), normal(2, 2, 6), normal(2, 3))],
    "Gather": [case(lambda a, i: tfl.gather(a, i), normal(5, 3), np.array([4, 0, -1, 4])),
               case(lambda a, i: tfl.gather(a, i, axis=1), normal(3, 4), np.array([[0, 3], [-1, 0]]))],
    "GatherGrad": [case(lambda g, a, i: GatherGrad(g, a, i, 1), normal(3, 2, 2), normal(3, 4), np.array([[0, 3], [-1, 0]])),
                   case(lambda g, a, i: GatherGrad(g, a, i, 0), normal(5, 3), normal(4, 3), np.array([1, 3, 1, -1, 0]))],
    "TakeAlongAxis": [case(lambda a, i: tfl.take_along_axis(a, i, 1), normal(3, 4), np.array([[0, 3], [1, 1], [-1, 2]])),
                      case(lambda a: tfl.topk(a, 2)[0], distinct(3, 5)),
                      case(lambda a: tfl.topk(a, 3, axis=0, largest=False)[0], distinct(4, 2))],
    "TakeAlongAxisGrad": [case(lambda g, a, i: TakeAlongAxisGrad(g, a, i, 0), normal(2, 3), normal(4, 3),
                               np.array([[0, 3, 1], [0, -1, 2]]))],
    "Pad": [case(lambda a: tfl.pad(a, ((1, 2), (0, 1)), value=0.5), normal(3, 4)),
            case(lambda a: tfl.pad(a, ((0, 0), (2, 3)), mode="reflect"), normal(2, 4)),
            case(lambda a: tfl.pad(a, 1, mode="edge"), normal(2, 3)),
            case(lambda a: tfl.pad(a, ((1, -1), (-2, 3)), mode="wrap"), normal(3, 4))],
    "PadGrad": [case(lambda g, a: PadGrad(g, a, ((1, 2), (-1, 2)), "reflect"), normal(6, 5), normal(3, 4))],
    "Einsum": [case(lambda a, b: tfl.einsum("bij,bjk->bik", a, b), normal(2, 3, 4), normal(2, 4, 2)),
               case(lambda a: tfl.einsum("ij->ji", a), normal(3, 4)), case(lambda a, b: tfl.einsum("i,i", a, b), normal(4), normal(4)),
               case(lambda a: tfl.einsum("...ii->...i", a), normal(2, 3, 3)), case(lambda a: tfl.einsum("ij->i", a), normal(3, 4)),
               case(lambda a, b: tfl.einsum("ij,kj->ikj", a, b), normal(2, 3), normal(4, 3))],
    "Triangle": [case(tfl.tril, normal(3, 4)), case(lambda a: tfl.triu(a, 1), normal(2, 3, 4)),
                 case(lambda a: tfl.tril(a, -1), normal(4, 3))],
    "AddN": [case(lambda a, b, c: tfl.add_n([a, b, c]), normal(3, 4), normal(3, 4), normal(4))],
    "SumToShapeOf": [case(SumToShapeOf, normal(3, 4), normal(4)), case(SumToShapeOf, normal(2, 3, 4), normal(3, 1))],
    "BroadcastLike": [case(BroadcastLike, normal(4), normal(3, 4))],
    # convolution and pooling over 1, 2 and 3 spatial axes
    "Conv": [case(tfl.conv2d, normal(2, 3, 5, 5), normal(4, 3, 3, 3)),
             case(lambda x, w: tfl.conv2d(x, w, stride=2, padding=1), normal(2, 2, 6, 5), normal(3, 2, 3, 3)),
             case(lambda x, w: tfl.conv2d(x, w, padding=(1, 0)), normal(1, 1, 4, 4), normal(2, 1, 1, 2)),
             case(lambda x, w: tfl.conv2d(x, w, padding=((0, 2), (1, 0)), dilation=(2, 1), groups=2),
                  normal(2, 4, 5, 4), normal(6, 2, 2, 3)),
             case(lambda x, w: tfl.conv2d(x, w, stride=2, padding="same", groups=3), normal(1, 3, 5, 4),
                  normal(3, 1, 3, 2)),
             case(lambda x, w: tfl.conv1d(x, w, stride=2, padding=2, dilation=2), normal(2, 2, 9), normal(3, 2, 3)),
             case(lambda x, w: tfl.conv3d(x, w, padding=(1, 0, 1)), normal(1, 2, 3, 4, 3), normal(2, 2, 2, 2, 2))],
    "ConvBackInput": [case(lambda g, w, x: ConvBackInput(g, w, x, (2, 2), 1), normal(2, 3, 3, 3), normal(3, 2, 3, 3),
                           normal(2, 2, 5, 5)),
                      case(lambda g, w, x: ConvBackInput(g, w, x, 1, ((0, 2), (1, 0)), (2, 1), 2), normal(2, 6, 5, 3),
                           normal(6, 2, 2, 3), normal(2, 4, 5, 4)),
                      case(lambda g, w, x: ConvBackInput(g, w, x, 2, 1), normal(1, 2, 4), normal(2, 3, 3), normal(1, 3, 7))],
    "ConvBackFilter": [case(lambda x, g, w: ConvBackFilter(x, g, w, (1, 1), (1, 1)), normal(2, 2, 4, 4),
                            normal(2, 3, 4, 4), normal(3, 2, 3, 3)),
                       case(lambda x, g, w: ConvBackFilter(x, g, w, 1, ((0, 2), (1, 0)), (2, 1), 2), normal(2, 4, 5, 4),
                            normal(2, 6, 5, 3), normal(6, 2, 2, 3)),
                       case(lambda x, g, w: ConvBackFilter(x, g, w, 1, 0), normal(1, 2, 3, 3, 3), normal(1, 2, 2, 2, 2),
                            normal(2, 2, 2, 2, 2))],
    "ConvTranspose": [case(tfl.conv_transpose2d, normal(2, 3, 3, 3), normal(3, 2, 3, 3)),
                      case(lambda x, w: tfl.conv_transpose2d(x, w, stride=2, padding=1, output_padding=1),
                           normal(1, 2, 3, 4), normal(2, 3, 3, 2)),
                      case(lambda x, w: tfl.conv_transpose2d(x, w, stride=(2, 3), padding=((1, 0), (0, 2)), groups=2,
                                                             dilation=2), normal(2, 4, 3, 3), normal(4, 2, 2, 3)),
                      case(lambda x, w: tfl.conv_transpose1d(x, w, stride=3), normal(2, 2, 4), normal(2, 3, 2)),
                      case(lambda x, w: tfl.conv_transpose3d(x, w, stride=2, padding=1), normal(1, 2, 2, 3, 2),
                           normal(2, 1, 3, 3, 3))],
    "MaxPool": [case(lambda x: tfl.max_pool2d(x, 2), distinct(2, 3, 4, 4)),
                case(lambda x: tfl.max_pool2d(x, 3, stride=2, padding=1), distinct(1, 2, 5, 5)),
                case(lambda x: tfl.max_pool2d(x, (2, 1)), distinct(1, 1, 4, 3)),
                case(lambda x: tfl.max_pool2d(x, 3, stride=2, padding=((0, 1), (1, 2)), dilation=(1, 2),
                                              ceil_mode=True), distinct(1, 2, 6, 7)),
                case(lambda x: tfl.max_pool1d(x, 3, padding="same"), distinct(2, 2, 7)),
                case(lambda x: tfl.max_pool3d(x, 2, stride=1, padding=1), distinct(1, 2, 3, 3, 2))],
    "MaxPoolGrad": [case(lambda x, g: MaxPoolGrad(x, g, kernel_size=2), distinct(1, 2, 4, 4), normal(1, 2, 2, 2)),
                    case(lambda x, g: MaxPoolGrad(x, g, kernel_size=(3, 2), stride=2, padding=1, dilation=(1, 2),
                                                  ceil_mode=True), distinct(1, 2, 5, 6), normal(1, 2, 3, 4)),
                    case(lambda x, g: MaxPoolGrad(x, g, kernel_size=3, stride=2), distinct(2, 1, 8), normal(2, 1, 3))],
    "MaxPoolGather": [case(lambda x, h: MaxPoolGather(x, h, kernel_size=3, stride=2, padding=1),
                           distinct(1, 2, 5, 5), normal(1, 2, 5, 5)),
                      case(lambda x, h: MaxPoolGather(x, h, kernel_size=2, dilation=2, ceil_mode=True, stride=2),
                           distinct(2, 2, 7), normal(2, 2, 7))],
    "AvgPool": [case(lambda x: tfl.avg_pool2d(x, 2), normal(2, 3, 4, 4)),
                case(lambda x: tfl.avg_pool2d(x, 3, stride=2, padding=1), normal(1, 2, 5, 6)),
                case(lambda x: tfl.avg_pool2d(x, 3, stride=2, padding=1, ceil_mode=True, count_include_pad=False),
                     normal(1, 2, 6, 6)),
                case(lambda x: tfl.avg_pool1d(x, 2, dilation=2, padding="same"), normal(2, 2, 7)),
                case(lambda x: tfl.avg_pool3d(x, (2, 3, 2), stride=1, padding=(1, 1, 0)), normal(1, 2, 3, 4, 2))],
    "AvgPoolGrad": [case(lambda x, g: AvgPoolGrad(x, g, kernel_size=3, stride=2, padding=1),
                         normal(1, 2, 5, 5), normal(1, 2, 3, 3)),
                    case(lambda x, g: AvgPoolGrad(x, g, kernel_size=3, stride=2, padding=1, ceil_mode=True,
                                                  count_include_pad=False), normal(1, 2, 6, 6), normal(1, 2, 4, 4))],
    # normalization
    "LayerNorm": [case(lambda x: tfl.layer_norm(x, 5), normal(3, 5)),
                  case(lambda x: LayerNorm(x, axis=1), normal(2, 3, 4)),
                  case(lambda x, w, b: tfl.layer_norm(x, (3, 2), w, b, eps=1e-3), normal(4, 3, 2), normal(3, 2),
                       normal(3, 2)),
                  case(lambda x, w, b: tfl.instance_norm(x, w, b), normal(2, 3, 2, 2), normal(3), normal(3)),
                  case(lambda x, w, b: tfl.group_norm(x, 2, w, b), normal(2, 4, 3), normal(4), normal(4))],
    "LayerNormGrad": [case(lambda x, g: LayerNormGrad(x, g), normal(3, 4), normal(3, 4)),
                      case(lambda x, g: LayerNormGrad(x, g, axis=1, eps=0.1), normal(2, 3, 2), normal(2, 3, 2))],
    # the recurrent loop (its RecurrenceGrad kernels run in the gradient checks)
    "Recurrence": [case(lambda x, w, s: Recurrence(x, w, s, cell="LSTM"), normal(3, 2, 8), normal(8, 2), normal(2, 2, 2)),
                   case(lambda x, w, s, b: Recurrence(x, w, s, b, cell="GRU", reverse=True), normal(2, 3, 6) * 3,
                        normal(6, 2), normal(3, 2), normal(6)),
                   # ONNX's gate orders
                   case(lambda x, w, s: Recurrence(x, w, s, cell="LSTM", order=(0, 2, 3, 1)), normal(2, 2, 8),
                        normal(8, 2), normal(2, 2, 2)),
                   case(lambda x, w, s, b: Recurrence(x, w, s, b, cell="GRU", order=(1, 0, 2)), normal(2, 3, 6),
                        normal(6, 2), normal(3, 2), normal(6)),
                   # ONNX's GRU with linear_before_reset=0 (r before W_hn's product), in its gate order
                   case(lambda x, w, s, b: Recurrence(x, w, s, b, cell="GRU_RESET_FIRST", order=(1, 0, 2)),
                        normal(3, 2, 6), normal(6, 2), normal(2, 2), normal(6)),
                   case(lambda x, w, s: Recurrence(x, w, s, cell="GRU_RESET_FIRST", reverse=True), normal(2, 3, 9),
                        normal(9, 3), normal(3, 3)),
                   case(lambda x, w, s: Recurrence(x, w, s, cell="RNN_TANH"), normal(3, 1, 2), normal(2, 2),
                        normal(1, 2)),
                   case(lambda x, w, s: Recurrence(x, w, s, cell="RNN_RELU", reverse=True), normal(2, 2, 3),
                        normal(3, 3), normal(2, 3))],
    "RecurrenceGrad": [case(lambda x, w, s, g: RecurrenceGrad(x, w, s, g, cell="LSTM"), normal(2, 2, 8),
                            normal(8, 2), normal(2, 2, 2), normal(2, 2, 2, 2)),
                       case(lambda x, w, s, b, g: RecurrenceGrad(x, w, s, b, g, cell="GRU", reverse=True),
                            normal(2, 2, 6), normal(6, 2), normal(2, 2), normal(6), normal(2, 2, 2)),
                       case(lambda x, w, s, g: RecurrenceGrad(x, w, s, g, cell="LSTM", reverse=True, order=(0, 2, 3, 1)),
                            normal(2, 1, 8), normal(8, 2), normal(2, 1, 2), normal(2, 2, 1, 2)),
                       case(lambda x, w, s, g: RecurrenceGrad(x, w, s, g, cell="RNN_TANH"), normal(3, 1, 2),
                            normal(2, 2), normal(1, 2), normal(3, 1, 2)),
                       case(lambda x, w, s, b, g: RecurrenceGrad(x, w, s, b, g, cell="GRU_RESET_FIRST", reverse=True,
                                                                 order=(1, 0, 2)),
                            normal(2, 2, 6), normal(6, 2), normal(2, 2), normal(6), normal(2, 2, 2))],
    # resizing
    "Resize": [case(lambda x: tfl.interpolate(x, scale_factor=2), normal(1, 2, 2, 3)),
               case(lambda x: tfl.interpolate(x, size=(3, 5), mode="bilinear"), normal(2, 1, 4, 3)),
               case(lambda x: tfl.interpolate(x, size=5, mode="linear", align_corners=True), normal(1, 2, 3)),
               case(lambda x: Resize(x, sizes=(None, None, 3, 2), mode="cubic", antialias=True), normal(1, 1, 6, 5)),
               case(lambda x: Resize(x, scales=(1, 1, 0.6, 1.4), mode="linear", extrapolation_value=5.0,
                                     coordinate_transformation_mode="tf_crop_and_resize",
                                     roi=((0, 1), (0, 1), (0.2, 0.8), (-0.1, 1.0))), normal(1, 2, 5, 4)),
               case(lambda x, s: Resize(x, sizes=s, mode="linear"), normal(1, 2, 3, 4), np.array([1, 2, 5, 3]))],
    "ResizeGrad": [case(lambda g, x: ResizeGrad(g, x, sizes=(None, None, 3, 5), mode="linear"), normal(1, 2, 3, 5),
                        normal(1, 2, 2, 4)),
                   case(lambda g, x, s: ResizeGrad(g, x, sizes=s), normal(1, 2, 3, 5), normal(1, 2, 2, 4),
                        np.array([1, 2, 3, 5]))],
    # fused losses
    "SoftmaxCrossEntropy": [case(tfl.nn.softmax_cross_entropy, normal(4, 5), np.array([0, 3, 4, 3])),
                            case(tfl.nn.softmax_cross_entropy, normal(1, 1), np.array([0]))],
    "SoftmaxCrossEntropyGrad": [case(SoftmaxCrossEntropyGrad, normal(4, 5), np.array([1, 0, 4, 4]), normal())],
    "SigmoidCrossEntropy": [case(tfl.nn.sigmoid_cross_entropy, normal(4, 3) * 3, probabilities(4, 3))],
    # control flow (subgraphs run by the op's kernel)
    "Cond": [case(lambda p, a, b: cond(tfl.greater(tfl.reduce_sum(p), 0.0), lambda: a * b, lambda: tfl.exp(a) - b),
                  positive(3), normal(3, 4), normal(4)),
             case(lambda p, a: cond(tfl.greater(tfl.reduce_sum(p), 0.0), lambda: a, lambda: tfl.tanh(a)),
                  -positive(2), normal(2, 3))],
    "WhileLoop": [case(lambda a, b: while_loop(lambda i, v: tfl.less(i, 3), lambda i, v: (i + 1, v * a + b),
                                               [tfl.Constant(0), a], maximum_iterations=5)[1], normal(3, 2), normal(2)),
                  case(lambda a, b: while_loop(lambda i, v: tfl.less(tfl.reduce_sum(v), 4.0),
                                               lambda i, v: (i + 1, v * 1.5 + tfl.square(tfl.tanh(b)) + 0.1),
                                               [tfl.Constant(0), a])[1],
                       positive(4) * 0.1, normal(4))],
    # the rows of a tensor as a stack and back (what a tensor loop collects per iteration)
    "StackToTensor": [case(lambda x: StackToTensor(TensorToStack(x), x.shape[1:], x.dtype) * 2.0, normal(4, 3))],
    "TensorToStack": [case(lambda x: tfl.exp(StackToTensor(TensorToStack(x), (), x.dtype)), normal(5))],
    # one output of a cond or loop (their value is a tuple)
    "Output": [case(lambda a, b: cond(tfl.greater(tfl.reduce_sum(a), 0.0), lambda: (a * b, a - b),
                                      lambda: (b, tfl.exp(a)))[1], positive(3), normal(3))],
}


# Op types that exist in graphs only: a stack of per-iteration values lives inside a graph loop (eager code
# keeps a Python list), so the eager registry tests leave their cases out.
GRAPH_ONLY = {"StackToTensor", "TensorToStack"}


# ops without a gradient (comparisons, logic): their values are checked (kernel parity, ONNX round trips)
VALUE_CASES = {
    "Greater": [case(tfl.greater, normal(3, 4), normal(4))], "Less": [case(tfl.less, normal(3, 4), normal(3, 1))],
    "GreaterEqual": [case(tfl.greater_equal, normal(3), normal(3))],
    "LessEqual": [case(tfl.less_equal, normal(3), normal(3))],
    "Equal": [case(tfl.equal, np.array([1.0, 2.0, 3.0]), np.array([1.0, 0.0, 3.0]))],
    "NotEqual": [case(tfl.not_equal, np.array([1.0, 2.0, 3.0]), np.array([1.0, 0.0, 3.0]))],
    "LogicalAnd": [case(lambda a, b: tfl.logical_and(a > 0, b > 0), normal(3, 4), normal(4))],
    "LogicalOr": [case(lambda a, b: tfl.logical_or(a > 0, b > 0), normal(3, 4), normal(3, 4))],
    "LogicalXor": [case(lambda a, b: tfl.logical_xor(a > 0, b > 0), normal(3, 4), normal(3, 1))],
    "LogicalNot": [case(lambda a: tfl.logical_not(a > 0), normal(5))],
}


def _gradient_op_case(grad_op, parent, index, names):
    """A case of the gradient op of `parent`'s input `index`: built on the node of parent's first case, its output
    `y` and a gradient `g` (an extra input), so its gradient check differentiates through the parent too."""
    first = CASES[parent.op_type][0]
    with tfl.Graph().as_default():
        shape = first.build(*[tfl.Placeholder(v.shape, v.dtype) for v in first.inputs]).shape

    def build(*args):
        *xs, g = args
        out = op = first.build(*xs)
        if getattr(out, "graph", 0) is None:  # eager: the op that made the Tensor (recorded on copies needing grad)
            copies = [x.detach().requires_grad_() if x.dtype.kind == "f" else x for x in xs]
            with tfl.enable_grad():
                op = first.build(*copies).grad_fn
            op_inputs = [next((x for x, c in zip(xs, copies) if c is i), i) for i in op.inputs]  # by identity
        else:
            op_inputs = op.inputs
        values = dict(zip(parent.input_names, op_inputs), y=out, g=g)
        return grad_op(*[values[n] for n in names], **{a: getattr(op, a) for a in grad_op.attributes})
    return case(build, *first.inputs, normal(*shape), **first.options)


# every gradient op made from the elementwise table (SigmoidGrad, DivideGrad1...) is checked on its parent's case
for (_parent, _index), (_grad_op, _names) in GRADIENT_OPS.items():
    CASES.setdefault(_grad_op.op_type, [_gradient_op_case(_grad_op, _parent, _index, _names)])


def all_cases():
    """(id, case) pairs for pytest parametrisation."""
    return [(f"{op_type}-{i}", c) for op_type, cases in CASES.items() for i, c in enumerate(cases)]
