"""Fused elementwise kernels: the node standing for a chain of ops, and its generated C / OpenCL code."""
from .compiler import STATS, FusionWarning, KernelCacheWarning, cache_dir
from .dispatch import fused_kernel
from .fused_op import FusedElementwise

__all__ = ["FusedElementwise", "fused_kernel", "cache_dir", "STATS", "FusionWarning", "KernelCacheWarning"]
