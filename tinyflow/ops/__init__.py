"""All ops, one module per op family; each op class has its snake_case function and its gradient right below it."""
from .activations import leaky_relu, relu, sigmoid, softplus, tanh
from .array_ops import add_n, concat, get_item, identity, reshape, stop_gradient, transpose
from .conv import avg_pool2d, conv2d, max_pool2d
from .math_ops import (add, divide, equal, greater, greater_equal, less, less_equal, maximum, minimum, multiply,
                       power, subtract, where)
from .matmul import matmul
from .random_ops import dropout
from .reductions import argmax, reduce_max, reduce_mean, reduce_sum
from .shape_ops import fill, shape, size
from .softmax import log_softmax, softmax
from .state_ops import assign, assign_add, assign_sub, group
from .unary_ops import abs, cast, exp, log, negative, ones_like, sign, sqrt, square, zeros_like

from . import operators  # noqa: F401,E402 - installs + - * / @ < ... on Node (and, via tinyflow.eager, Tensor)
