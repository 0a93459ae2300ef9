"""Convolution, transposed convolution and pooling layers over 1, 2 or 3 spatial axes (N, C, *spatial)."""
import math

from ..ops.array_ops import checks, reshape
from ..ops.conv import Conv, ConvTranspose
from ..ops.pooling import AvgPool, MaxPool
from .layer import Layer, flags, get_activation, ranked, sizes


def _kernel(layer, name, kernel_size):
    """kernel_size as one int per spatial axis, each at least 1."""
    return checks(type(layer).__name__, name).ints("kernel_size", kernel_size, layer.rank - 2, minimum=1)


class _ConvNd(Layer):
    """act(conv(x, W) + b) with W of shape (out_channels, in_channels / groups, *kernel_size), as torch.nn.ConvNd."""

    transposed = False

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True,
                 act=None, weight_init="uniform", bias_init="zeros", name=None, dtype="float32"):
        self.act = get_activation(act)
        in_channels, out_channels, groups = sizes(self, name, in_channels=in_channels, out_channels=out_channels,
                                                  groups=groups)
        bias, = flags(self, name, bias=bias)
        if in_channels % groups or out_channels % groups:
            checks(type(self).__name__, name).fail("groups", groups, f"does not divide in_channels={in_channels} "
                                                   f"and out_channels={out_channels}", "pass a common divisor")
        kernel = _kernel(self, name, kernel_size)
        super().__init__(name, dtype)
        self.stride, self.padding, self.dilation, self.groups = stride, padding, dilation, groups
        # the weight is (out, in / groups, *kernel), transposed (in, out / groups, *kernel); torch takes the
        # fan-in from the weight's axis 1 in both cases
        first, second = (in_channels, out_channels) if self.transposed else (out_channels, in_channels)
        fan_in, fan_out = second // groups * math.prod(kernel), first // groups * math.prod(kernel)
        self.weight = self.add_variable("weight", (first, second // groups) + kernel, weight_init, fan_in, fan_out)
        self.bias = self.add_variable("bias", (out_channels,), bias_init, fan_in, fan_out) if bias else None

    def convolve(self, x):
        return Conv(x, self.weight, self.stride, self.padding, self.dilation, self.groups)

    def forward(self, x):
        y = self.convolve(x)
        if self.bias is not None:
            y = y + reshape(self.bias, (1, -1) + (1,) * (self.rank - 2))
        return self.act(y) if self.act else y


class _ConvTransposeNd(_ConvNd):
    """act(conv_transpose(x, W) + b) with W of shape (in_channels, out_channels / groups, *kernel_size), as torch."""

    transposed = True

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1,
                 bias=True, dilation=1, act=None, weight_init="uniform", bias_init="zeros", name=None,
                 dtype="float32"):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias, act,
                         weight_init, bias_init, name, dtype)
        self.output_padding = output_padding

    def convolve(self, x):
        return ConvTranspose(x, self.weight, self.stride, self.padding, self.output_padding, self.dilation,
                             self.groups)


class _MaxPoolNd(Layer):
    """Max pooling over kernel_size windows, as torch.nn.MaxPoolNd."""

    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, name=None):
        self.window = dict(kernel_size=_kernel(self, name, kernel_size), stride=stride, padding=padding,
                           dilation=dilation, ceil_mode=ceil_mode)
        super().__init__(name)

    def forward(self, x):
        return MaxPool(x, **self.window)


class _AvgPoolNd(Layer):
    """Average pooling over kernel_size windows (zero padding counted unless count_include_pad=False), as torch."""

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True, name=None):
        self.window = dict(kernel_size=_kernel(self, name, kernel_size), stride=stride, padding=padding,
                           ceil_mode=ceil_mode, count_include_pad=count_include_pad)
        super().__init__(name)

    def forward(self, x):
        return AvgPool(x, **self.window)


Conv1D, Conv2D, Conv3D = ranked(_ConvNd, "Conv{}D", "Convolution layer")
ConvTranspose1D, ConvTranspose2D, ConvTranspose3D = ranked(_ConvTransposeNd, "ConvTranspose{}D",
                                                           "Transposed convolution layer")
MaxPool1D, MaxPool2D, MaxPool3D = ranked(_MaxPoolNd, "MaxPool{}D", "Max pooling")
AvgPool1D, AvgPool2D, AvgPool3D = ranked(_AvgPoolNd, "AvgPool{}D", "Average pooling")
