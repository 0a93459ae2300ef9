"""The gradient table now lives in tinyflow/ops/registry.py (below the ops); this name keeps old imports working."""
from ..ops.registry import (NOT_DIFFERENTIABLE, gradient_function, not_differentiable,  # noqa: F401
                            register_gradient, registered_op_types)
