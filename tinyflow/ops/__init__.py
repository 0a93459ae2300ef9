"""All ops, one module per op family; each op class has its snake_case function and its gradient right below it."""
from .activations import leaky_relu, relu, sigmoid, softplus, tanh
from .array_ops import add_n, concat, get_item, identity, reshape, stop_gradient, transpose
from .conv import conv1d, conv2d, conv3d, conv_transpose1d, conv_transpose2d, conv_transpose3d
from .indexing import gather, take_along_axis, topk
from .linalg import einsum, tril, triu
from .logical_ops import logical_and, logical_not, logical_or, logical_xor
from .math_ops import (add, clip, divide, equal, fmod, greater, greater_equal, less, less_equal, maximum, minimum, mod,
                       multiply, power, subtract, where)
from .matmul import matmul
from .more_activations import elu, gelu, hard_sigmoid, hard_swish, prelu, selu, softsign
from .normalization import group_norm, instance_norm, layer_norm
from .pad import pad
from .pooling import (avg_pool1d, avg_pool2d, avg_pool3d, global_avg_pool, global_max_pool, max_pool1d, max_pool2d,
                      max_pool3d)
from .random_ops import dropout
from .reductions import (argmax, argmin, norm, reduce_logsumexp, reduce_max, reduce_mean, reduce_min, reduce_prod,
                         reduce_sum)
from .resize import interpolate
from .runtime_shapes import fill, shape, size
from .runtime_slice import runtime_slice
from .shape_ops import broadcast_to, expand, flatten, split, squeeze, stack, tile, unsqueeze
from .softmax import log_softmax, softmax
from .state_ops import assign, assign_add, assign_sub, group
from .unary_ops import (abs, cast, ceil, cos, erf, exp, floor, log, negative, ones_like, reciprocal, sign, sin, sqrt,
                        square, zeros_like)

from . import operators  # noqa: F401,E402 - installs + - * / @ < ... on Node (and, via tinyflow.eager, Tensor)
