"""Reverse-mode autodiff: the gradient-function registry and the backprop walk."""
from .gradients import gradients, nodes_between
from ..ops.registry import not_differentiable, register_gradient, registered_op_types

__all__ = ["gradients", "nodes_between", "register_gradient", "not_differentiable", "registered_op_types"]
