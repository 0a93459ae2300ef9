"""Linear (fully connected) layer."""
from ..ops.matmul import matmul
from .activations import get_activation
from .layer import Layer


class Linear(Layer):
    """y = act(x @ W + b) with W of shape (in_features, out_features)."""

    def __init__(self, in_features, out_features, bias=True, act=None, weight_init="uniform", bias_init="zeros",
                 name=None, dtype="float32"):
        self.act = get_activation(act)  # checked first: an unknown name fails before any Variable exists
        super().__init__(name, dtype)
        self.in_features, self.out_features = int(in_features), int(out_features)
        self.weight = self.add_variable("weight", (in_features, out_features), weight_init, in_features, out_features)
        self.bias = self.add_variable("bias", (out_features,), bias_init, in_features, out_features) if bias else None

    def forward(self, x):
        y = matmul(x, self.weight)
        if self.bias is not None:
            y = y + self.bias
        return self.act(y) if self.act else y
