"""Stacks: how a loop keeps, per iteration, the values its gradient needs (TensorFlow 1's stacks).

    forward loop body                          gradient loop body (runs the iterations backwards)
    ─────────────────                          ──────────────────────────────────────────────────
    h = tanh(x·W + h_prev)                     k = k - 1
    StackPush(stack_h, h)   ── stack_h ──▶     h_k = StackPop(stack_h, k)   (stands for h of iteration k)
                                               dh_prev = (1 - h_k²) · dh ...

The forward loop's kernel feeds the body's stack input a fresh stack per run; each iteration's StackPush appends a
reference to the value (no copy). The loop outputs the stack, the gradient loop reads it, and the outer plan drops it
after its last reader: it lives from the forward loop to the end of the backward pass (the memory profile counts it).
"""
import numpy as np

from ..errors import ExecutionError
from ..nodes import Operation, Placeholder
from ..ops.registry import not_differentiable, register_gradient


class StackValue:
    """The run-time value of a stack: the values pushed, first iteration first."""

    __slots__ = ("name", "values", "__weakref__")

    def __init__(self, name, values=()):
        self.name, self.values = name, list(values)

    def __len__(self):
        return len(self.values)

    def arrays(self):
        """The values held (the memory profile counts their buffers)."""
        return self.values

    def __repr__(self):
        return f"<stack '{self.name}': {len(self.values)} value(s)>"


class StackInput(Placeholder):
    """A loop body's stack: fed by the loop's kernel with a fresh StackValue per run."""

    def __init__(self, name=None):
        super().__init__(None, "float32", name=name)
        self.dtype = None  # a stack, not a tensor


def add_stacks(stacks):
    """The sum of several stack-valued gradients (the gradient engine's AddN for stacks)."""
    return StackAddN(*stacks)


class _StackOp(Operation):
    """An op whose value is a stack; its kernel on any backend is `compute` (device arrays stay as they are)."""

    abstract = True
    add_stacks = staticmethod(add_stacks)

    def infer_shape(self, *shapes):
        return None

    def infer_dtype(self, *dtypes):
        return None

    def bind_kernel(self, backend):
        return self.compute


class StackPush(_StackOp):
    """Append `value` to `stack`; the result is the stack (the loop outputs it)."""

    def compute(self, stack, value):
        stack.values.append(value)
        return stack


class StackAddN(_StackOp):
    """Stacks of equal length added value by value (two gradients reaching one recorded stack)."""

    @property
    def stack_dtype(self):
        return self.inputs[0].stack_dtype

    def compute(self, *stacks):
        return StackValue(stacks[0].name, [sum(values[1:], values[0]) for values in zip(*(s.values for s in stacks))])


class TensorToStack(_StackOp):
    """The rows of a tensor as a stack (the gradient of StackToTensor)."""

    @property
    def stack_dtype(self):
        return self.inputs[0].dtype

    def compute(self, x):
        return StackValue(self.name, np.asarray(x))

    def bind_kernel(self, backend):
        """Any backend: rows of the host array."""
        return lambda x: self.compute(backend.to_host(x))


class StackPop(Operation):
    """The value pushed at iteration `step`; the stack stays whole, so several gradient loops can read it."""

    def __init__(self, stack, step, element_shape=None, element_dtype="float32", name=None):
        self.element_shape = element_shape
        self.element_dtype = None if element_dtype is None else np.dtype(element_dtype)  # None: a stack or tuple
        super().__init__(stack, step, name=name)

    def infer_shape(self, stack_shape, step_shape):
        return self.element_shape

    def infer_dtype(self, stack_dtype, step_dtype):
        return self.element_dtype

    def compute(self, stack, step):
        step = int(np.asarray(step))
        if not 0 <= step < len(stack.values):
            raise ExecutionError(f"StackPop '{self.name}': iteration {step} of stack '{stack.name}', which holds "
                                 f"{len(stack.values)} value(s); the gradient loop ran more iterations than the "
                                 "forward loop recorded")
        return stack.values[step]

    def bind_kernel(self, backend):
        """Any backend: the value as it was pushed (the step, an integer, is read on the host)."""
        return lambda stack, step: self.compute(stack, backend.to_host(step))


class StackToTensor(Operation):
    """A stack's values as one tensor, first pushed first: a list appended in a tensor loop, ONNX Loop's scan output."""

    def __init__(self, stack, element_shape=None, element_dtype="float32", name=None):
        self.element_shape, self.element_dtype = element_shape, np.dtype(element_dtype)
        super().__init__(stack, name=name)

    def infer_shape(self, stack_shape):
        return None if self.element_shape is None else (None,) + tuple(self.element_shape)

    def infer_dtype(self, stack_dtype):
        return self.element_dtype

    def compute(self, stack):
        if not stack.values:
            shape = tuple(0 if d is None else d for d in (self.element_shape or ()))
            return np.zeros((0,) + shape, self.element_dtype)
        return np.stack([np.asarray(v) for v in stack.values])

    def bind_kernel(self, backend):
        """Any backend: the values are gathered on the host (they may be device arrays)."""
        return lambda stack: self.compute(StackValue(stack.name, [backend.to_host(v) for v in stack.values]))


register_gradient(StackToTensor)(lambda op, grad: [TensorToStack(grad)])
register_gradient(TensorToStack)(lambda op, grad: [
    StackToTensor(grad, op.inputs[0].shape[1:] if op.inputs[0].shape else None, op.inputs[0].dtype)])


not_differentiable(StackPush, StackPop, StackAddN)
