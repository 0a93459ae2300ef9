"""All ops, one module per op family; each op class has its snake_case function and its gradient right below it.
The elementwise ops are the rows of one table (elementwise.py), made into classes by elementwise_ops.py."""
from .elementwise_ops import *  # noqa: F401,F403 - every op of the table, its function, and clip, cast, gelu, ...
from .array_ops import add_n, concat, get_item, identity, reshape, stop_gradient, transpose
from .conv import conv1d, conv2d, conv3d, conv_transpose1d, conv_transpose2d, conv_transpose3d
from .indexing import gather, masked_fill, one_hot, repeat_interleave, take_along_axis, topk
from .matmul import diag, einsum, matmul, outer, tril, triu
from .normalization import group_norm, instance_norm, layer_norm
from .pad import pad
from .pooling import (avg_pool1d, avg_pool2d, avg_pool3d, global_avg_pool, global_max_pool, max_pool1d, max_pool2d,
                      max_pool3d)
from .random_ops import dropout
from .reductions import (argmax, argmin, cumprod, cumsum, norm, reduce_logsumexp, reduce_max, reduce_mean, reduce_min,
                         reduce_prod, reduce_sum, std, var)
from .reductions import reduce_all as all, reduce_any as any  # noqa: A004 - torch's names (tfl.any, tfl.all)
from .reductions import reduce_logsumexp as logsumexp, reduce_max as max, reduce_min as min  # noqa: A004
from .resize import interpolate
from .runtime_shapes import fill, runtime_slice, shape, size
from .shape_ops import broadcast_to, expand, flatten, flip, roll, split, squeeze, stack, tile, unsqueeze
from .softmax import log_softmax, softmax
from .state_ops import assign, assign_add, assign_sub, group

from . import operators  # noqa: F401,E402 - installs + - * / @ < ... on Node (and, via tinyflow.eager, Tensor)
