"""What the explorer page shows of an array: shape, statistics, and a small heat map for 2-D values, as plain JSON
(NaN and ±infinity as the strings "NaN", "Infinity" and "-Infinity": the page parses its data with JSON.parse)."""
import functools
import math

import numpy as np

HEATMAP_CELLS = 32  # a heat map has at most this many rows and columns (blocks of the value are averaged)
SMALL = 64          # arrays up to this size are summarised in plain Python (faster for a few numbers)


def json_number(x):
    """A float as JSON can hold it: the number, or "NaN" / "Infinity" / "-Infinity"."""
    x = float(x)
    return x if math.isfinite(x) else "NaN" if math.isnan(x) else "Infinity" if x > 0 else "-Infinity"


@functools.lru_cache(maxsize=None)
def dtype_name(dtype):
    """str(dtype), cached (numpy builds the text anew at each call: slow for ten thousand nodes)."""
    return str(dtype)


def summary(value, with_heatmap=True):
    """{"shape", "dtype", "size", "mean", "std", "min", "max", "nan", "inf", "value" (scalars), "heatmap" (2-D)};
    None for no value (None, or the several values of a control-flow op)."""
    if value is None or isinstance(value, (list, tuple)):
        return None
    array = np.asarray(value)
    result = {"shape": list(array.shape), "dtype": dtype_name(array.dtype), "size": int(array.size)}
    if array.size == 0 or array.dtype.kind not in "biuf":
        return result
    numbers = array.astype(np.float64)
    stats, result["nan"], result["inf"] = (_small_statistics if array.size <= SMALL else _statistics)(numbers)
    result.update(zip(("mean", "std", "min", "max"), map(json_number, stats)))
    if array.size == 1:
        result["value"] = json_number(numbers.reshape(()))
    if with_heatmap and array.ndim == 2:
        result["heatmap"] = heatmap(numbers)
    return result


def _statistics(numbers):
    """((mean, std, min, max) of the finite entries, NaN count, infinity count) with numpy."""
    finite = np.isfinite(numbers)
    nan = int(np.isnan(numbers).sum())
    shown = numbers[finite]
    if not shown.size:
        return (math.nan,) * 4, nan, numbers.size - nan
    with np.errstate(over="ignore", invalid="ignore"):  # values near the float64 limit: the std may overflow
        return (shown.mean(), shown.std(), shown.min(), shown.max()), nan, numbers.size - shown.size - nan


def _small_statistics(numbers):
    """The same as `_statistics` in plain Python: for a few numbers, ten numpy calls cost more than the maths."""
    values = numbers.ravel().tolist()
    shown = [v for v in values if math.isfinite(v)]
    nan = sum(1 for v in values if v != v)
    if not shown:
        return (math.nan,) * 4, nan, len(values) - nan
    mean = math.fsum(shown) / len(shown)
    try:
        std = math.sqrt(math.fsum((v - mean) ** 2 for v in shown) / len(shown))
    except OverflowError:  # values near the float64 limit
        std = math.inf
    return (mean, std, min(shown), max(shown)), nan, len(values) - len(shown) - nan


def heatmap(matrix):
    """The matrix as at most HEATMAP_CELLS x HEATMAP_CELLS cells, each the mean of its block of entries."""
    rows, cols = matrix.shape
    row_starts, col_starts = _block_starts(rows), _block_starts(cols)
    with np.errstate(invalid="ignore", over="ignore"):
        sums = np.add.reduceat(np.add.reduceat(matrix, row_starts, axis=0), col_starts, axis=1)
        counts = np.outer(np.diff(np.append(row_starts, rows)), np.diff(np.append(col_starts, cols)))
        cells = sums / counts
    return {"rows": int(rows), "cols": int(cols),
            "cells": [[json_number(x) for x in row] for row in cells]}


def _block_starts(length):
    """The first index of each of at most HEATMAP_CELLS nearly equal blocks covering range(length)."""
    count = min(length, HEATMAP_CELLS)
    return np.unique((np.arange(count) * length) // count)
