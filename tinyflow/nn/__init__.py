"""Neural-network building blocks on the graph: losses, activations, initializers, layers."""
import types

from .norm_layers import (BatchNorm1d, BatchNorm2d, BatchNorm3d, GroupNorm, InstanceNorm1d, InstanceNorm2d,
                        InstanceNorm3d, LayerNorm, batch_norm)
from .conv_layers import (AvgPool1D, AvgPool2D, AvgPool3D, Conv1D, Conv2D, Conv3D, ConvTranspose1D, ConvTranspose2D,
                   ConvTranspose3D, MaxPool1D, MaxPool2D, MaxPool3D)
from .layer import (Dropout, Flatten, Layer, Linear, Sequential, get_activation, register_activation,
                    register_initializer, registered_activations, registered_initializers, training_flag, update_ops)
from .recurrent import GRU, LSTM, RNN
from ..ops.attention import scaled_dot_product_attention
from .losses import (binary_cross_entropy, binary_cross_entropy_with_logits, l1_loss, mse_loss, nll_loss,
                     sigmoid_cross_entropy, smooth_l1_loss, softmax_cross_entropy)

__all__ = [name for name, value in globals().items()  # every layer, loss and registry function imported above
           if not name.startswith("_") and not isinstance(value, types.ModuleType)]
