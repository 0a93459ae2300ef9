"""Convolution and pooling layers (NCHW)."""
from ..ops.array_ops import reshape
from ..ops.conv import avg_pool2d, conv2d, max_pool2d
from .activations import get_activation
from .layer import Layer


def _pair(v):
    return (v, v) if isinstance(v, int) else tuple(v)


class Conv2D(Layer):
    """act(conv2d(x, W) + b) with W of shape (out_channels, in_channels, kH, kW)."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, bias=True, act=None,
                 weight_init="uniform", bias_init="zeros", name=None, dtype="float32"):
        self.act = get_activation(act)
        super().__init__(name, dtype)
        kh, kw = _pair(kernel_size)
        self.stride, self.padding = stride, padding
        fan_in, fan_out = in_channels * kh * kw, out_channels * kh * kw
        self.weight = self.add_variable("weight", (out_channels, in_channels, kh, kw), weight_init, fan_in, fan_out)
        self.bias = self.add_variable("bias", (out_channels,), bias_init, fan_in, fan_out) if bias else None

    def forward(self, x):
        y = conv2d(x, self.weight, self.stride, self.padding)
        if self.bias is not None:
            y = y + reshape(self.bias, (1, -1, 1, 1))
        return self.act(y) if self.act else y


class MaxPool2D(Layer):
    """Max pooling over kernel_size windows."""

    def __init__(self, kernel_size, stride=None, padding=0, name=None):
        super().__init__(name)
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding

    def forward(self, x):
        return max_pool2d(x, self.kernel_size, self.stride, self.padding)


class AvgPool2D(MaxPool2D):
    """Average pooling over kernel_size windows (zero padding counted, as PyTorch)."""

    def forward(self, x):
        return avg_pool2d(x, self.kernel_size, self.stride, self.padding)
