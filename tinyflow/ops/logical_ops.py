"""Elementwise logic on booleans: logical_and, logical_or, logical_xor, logical_not.

Inputs of any dtype count as true where non-zero (numpy's rule); the result is bool.
None of them is differentiable.
"""
import numpy as np

from .math_ops import BinaryOperation
from .registry import not_differentiable
from .unary_ops import UnaryOperation


class LogicalAnd(BinaryOperation):
    """a and b, elementwise, with broadcasting."""

    def compute(self, a, b):
        return np.logical_and(a, b)


def logical_and(a, b, name=None):
    """a and b elementwise (bool), with broadcasting."""
    return LogicalAnd(a, b, name=name)


class LogicalOr(BinaryOperation):
    """a or b, elementwise, with broadcasting."""

    def compute(self, a, b):
        return np.logical_or(a, b)


def logical_or(a, b, name=None):
    """a or b elementwise (bool), with broadcasting."""
    return LogicalOr(a, b, name=name)


class LogicalXor(BinaryOperation):
    """a xor b (exactly one is true), elementwise, with broadcasting."""

    def compute(self, a, b):
        return np.logical_xor(a, b)


def logical_xor(a, b, name=None):
    """a xor b elementwise (bool), with broadcasting."""
    return LogicalXor(a, b, name=name)


class LogicalNot(UnaryOperation):
    """not x, elementwise."""

    def compute(self, x):
        return np.logical_not(x)


def logical_not(x, name=None):
    """not x elementwise (bool)."""
    return LogicalNot(x, name=name)


not_differentiable(LogicalAnd, LogicalOr, LogicalXor, LogicalNot)
