"""All ops, one module per family; each op class has its gradient registered beside it."""
from .activations import leaky_relu, relu, sigmoid, softplus, tanh
from .array_ops import (add_n, concat, get_item, identity, reshape, stop_gradient,
                        transpose)
from .conv import avg_pool2d, conv2d, max_pool2d
from .math_ops import (abs, add, cast, divide, equal, exp, greater, greater_equal, less, less_equal, log,
                       maximum, minimum, multiply, negative, ones_like, power, sign, sqrt, square, subtract,
                       where, zeros_like)
from .matmul import matmul
from .random_ops import dropout
from .reductions import argmax, reduce_max, reduce_mean, reduce_sum
from .softmax import log_softmax, softmax
from .state_ops import assign, assign_add, assign_sub, group
from . import operators  # noqa: F401,E402 - installs + - * / @ < ... on Node (and, via tinyflow.eager, Tensor)
