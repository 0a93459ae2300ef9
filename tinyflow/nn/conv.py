"""Convolution, transposed convolution and pooling layers over 1, 2 or 3 spatial axes (N, C, *spatial)."""
import math

from ..ops.array_ops import reshape
from ..ops.conv import Conv, ConvTranspose
from ..ops.pooling import AvgPool, MaxPool
from .activations import get_activation
from .layer import Layer


def _sizes(value, rank):
    return (value,) * rank if isinstance(value, int) else tuple(value)


class _ConvNd(Layer):
    """act(conv(x, W) + b) with W of shape (out_channels, in_channels / groups, *kernel_size), as torch.nn.ConvNd."""

    rank = None

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True,
                 act=None, weight_init="uniform", bias_init="zeros", name=None, dtype="float32"):
        self.act = get_activation(act)
        if in_channels % groups or out_channels % groups:
            raise ValueError(f"{type(self).__name__}: in_channels={in_channels} and out_channels={out_channels} "
                             f"must both split into groups={groups}")
        super().__init__(name, dtype)
        kernel = _sizes(kernel_size, self.rank)
        self.stride, self.padding, self.dilation, self.groups = stride, padding, dilation, groups
        fan_in, fan_out = in_channels // groups * math.prod(kernel), out_channels // groups * math.prod(kernel)
        self.weight = self.add_variable("weight", (out_channels, in_channels // groups) + kernel, weight_init,
                                        fan_in, fan_out)
        self.bias = self.add_variable("bias", (out_channels,), bias_init, fan_in, fan_out) if bias else None

    def forward(self, x):
        y = Conv(x, self.weight, self.stride, self.padding, self.dilation, self.groups)
        if self.bias is not None:
            y = y + reshape(self.bias, (1, -1) + (1,) * self.rank)
        return self.act(y) if self.act else y


class Conv1D(_ConvNd):
    """1-D convolution layer over (N, C, L)."""

    rank = 1


class Conv2D(_ConvNd):
    """2-D convolution layer over (N, C, H, W)."""

    rank = 2


class Conv3D(_ConvNd):
    """3-D convolution layer over (N, C, D, H, W)."""

    rank = 3


class _ConvTransposeNd(Layer):
    """act(conv_transpose(x, W) + b) with W of shape (in_channels, out_channels / groups, *kernel_size), as
    torch.nn.ConvTransposeNd."""

    rank = None

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1,
                 bias=True, dilation=1, act=None, weight_init="uniform", bias_init="zeros", name=None,
                 dtype="float32"):
        self.act = get_activation(act)
        if in_channels % groups or out_channels % groups:
            raise ValueError(f"{type(self).__name__}: in_channels={in_channels} and out_channels={out_channels} "
                             f"must both split into groups={groups}")
        super().__init__(name, dtype)
        kernel = _sizes(kernel_size, self.rank)
        self.stride, self.padding, self.output_padding = stride, padding, output_padding
        self.dilation, self.groups = dilation, groups
        # torch takes the fan-in of a transposed convolution from the weight's axis 1
        fan_in, fan_out = out_channels // groups * math.prod(kernel), in_channels // groups * math.prod(kernel)
        self.weight = self.add_variable("weight", (in_channels, out_channels // groups) + kernel, weight_init,
                                        fan_in, fan_out)
        self.bias = self.add_variable("bias", (out_channels,), bias_init, fan_in, fan_out) if bias else None

    def forward(self, x):
        y = ConvTranspose(x, self.weight, self.stride, self.padding, self.output_padding, self.dilation, self.groups)
        if self.bias is not None:
            y = y + reshape(self.bias, (1, -1) + (1,) * self.rank)
        return self.act(y) if self.act else y


class ConvTranspose1D(_ConvTransposeNd):
    """1-D transposed convolution layer over (N, C, L)."""

    rank = 1


class ConvTranspose2D(_ConvTransposeNd):
    """2-D transposed convolution layer over (N, C, H, W)."""

    rank = 2


class ConvTranspose3D(_ConvTransposeNd):
    """3-D transposed convolution layer over (N, C, D, H, W)."""

    rank = 3


class _MaxPoolNd(Layer):
    """Max pooling over kernel_size windows, as torch.nn.MaxPoolNd."""

    rank = None

    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, name=None):
        super().__init__(name)
        self.kernel_size, self.stride, self.padding = _sizes(kernel_size, self.rank), stride, padding
        self.dilation, self.ceil_mode = dilation, ceil_mode

    def forward(self, x):
        return MaxPool(x, self.kernel_size, self.stride, self.padding, self.dilation, self.ceil_mode)


class MaxPool1D(_MaxPoolNd):
    """1-D max pooling over (N, C, L)."""

    rank = 1


class MaxPool2D(_MaxPoolNd):
    """2-D max pooling over (N, C, H, W)."""

    rank = 2


class MaxPool3D(_MaxPoolNd):
    """3-D max pooling over (N, C, D, H, W)."""

    rank = 3


class _AvgPoolNd(Layer):
    """Average pooling over kernel_size windows (zero padding counted unless count_include_pad=False), as torch."""

    rank = None

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True, name=None):
        super().__init__(name)
        self.kernel_size, self.stride, self.padding = _sizes(kernel_size, self.rank), stride, padding
        self.ceil_mode, self.count_include_pad = ceil_mode, count_include_pad

    def forward(self, x):
        return AvgPool(x, self.kernel_size, self.stride, self.padding, 1, self.ceil_mode, self.count_include_pad)


class AvgPool1D(_AvgPoolNd):
    """1-D average pooling over (N, C, L)."""

    rank = 1


class AvgPool2D(_AvgPoolNd):
    """2-D average pooling over (N, C, H, W)."""

    rank = 2


class AvgPool3D(_AvgPoolNd):
    """3-D average pooling over (N, C, D, H, W)."""

    rank = 3
