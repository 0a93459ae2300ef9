"""Plots for training results and memory plans: each returns a matplotlib Figure (shown inline in notebooks)
and writes it to `path` when one is given."""
import functools
import io

import numpy as np


@functools.cache
def _figure_class():
    """tinyflow.plot.Figure, made on first use: importing matplotlib takes most of a second."""
    import matplotlib.figure

    class Figure(matplotlib.figure.Figure):
        """A matplotlib Figure that shows itself in notebooks without pyplot (and its global state)."""

        def _repr_png_(self):
            buffer = io.BytesIO()
            self.savefig(buffer, format="png", dpi=100, bbox_inches="tight")
            return buffer.getvalue()

    Figure.__qualname__ = "Figure"  # pickle finds it as tinyflow.plot.Figure, through __getattr__ below
    return Figure


def __getattr__(name):
    """`Figure`, the class of the figures these plots return (matplotlib imported when first asked for)."""
    if name == "Figure":
        return _figure_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def figure(**options):
    """A new Figure (matplotlib's options, e.g. figsize) for plots of your own."""
    return _figure_class()(**options)


def _finish(fig, path, *axes):
    """Legends and grids on `axes`, a tight layout, and the figure written to `path` when one is given."""
    for ax in axes:
        ax.legend()
        ax.grid(alpha=0.3)
    fig.tight_layout()
    if path is not None:
        fig.savefig(path, dpi=120)
    return fig


def training_curves(history, path=None, *, title="Training curves"):
    """Loss (and each metric) per epoch from a History, training and validation side by side."""
    keys = [k for k in history.history if not k.startswith("val_")]
    fig = figure(figsize=(5 * len(keys), 3.6))
    for i, key in enumerate(keys, start=1):
        ax = fig.add_subplot(1, len(keys), i, xlabel="epoch", ylabel=key)
        ax.plot(history.epochs, history[key], label=f"training {key}")
        if f"val_{key}" in history.history:
            ax.plot(history.epochs, history[f"val_{key}"], label=f"validation {key}")
        if key == "loss" and min(history[key]) > 0:
            ax.set_yscale("log")
    fig.suptitle(title)
    return _finish(fig, path, *fig.axes)


def predicted_vs_actual(y_true, y_pred, path=None, *, title="Predicted vs actual", unit=""):
    """Scatter of predictions against targets for regression, with the y = x line."""
    y_true, y_pred = np.ravel(y_true), np.ravel(y_pred)
    rmse = float(np.sqrt(np.mean((y_true - y_pred) ** 2)))
    fig = figure(figsize=(4.8, 4.6))
    ax = fig.add_subplot(1, 1, 1, xlabel=f"actual{unit}", ylabel=f"predicted{unit}", title=f"{title} (RMSE {rmse:.3g})")
    ax.scatter(y_true, y_pred, s=12, alpha=0.7)
    low, high = min(y_true.min(), y_pred.min()), max(y_true.max(), y_pred.max())
    ax.plot([low, high], [low, high], color="grey", linestyle="--", label="perfect prediction")
    return _finish(fig, path, ax)


def confusion_matrix(y_true, y_pred, path=None, *, labels=None, title="Confusion matrix"):
    """Counts of true class (rows) against predicted class (columns); y_pred may be class scores."""
    y_true, y_pred = np.asarray(y_true), np.asarray(y_pred)
    if y_pred.ndim == 2:
        y_pred = y_pred.argmax(axis=1)
    n = int(max(y_true.max(), y_pred.max())) + 1 if labels is None else len(labels)
    counts = np.zeros((n, n), dtype=np.int64)
    np.add.at(counts, (y_true, y_pred), 1)
    fig = figure(figsize=(0.5 * n + 2.5, 0.5 * n + 2))
    ax = fig.add_subplot(1, 1, 1, xlabel="predicted", ylabel="true",
                         title=f"{title} (accuracy {np.trace(counts) / max(counts.sum(), 1):.3f})")
    fig.colorbar(ax.imshow(counts, cmap="Blues"), ax=ax)
    names = [str(label) for label in (labels if labels is not None else range(n))]
    ax.set_xticks(range(n), names)
    ax.set_yticks(range(n), names)
    for (i, j), count in np.ndenumerate(counts):
        if count:
            ax.text(j, i, str(count), ha="center", va="center",
                    color="white" if count > counts.max() / 2 else "black", fontsize=8)
    return _finish(fig, path)


def plot_memory(profile, path=None, *, title="Memory during one run"):
    """A step plot of the MB alive per step of an execution plan (from Session.memory_profile), with the peak."""
    steps = [r["position"] for r in profile.rows]
    fig = figure(figsize=(max(6, 0.18 * len(steps)), 3.8))
    ax = fig.add_subplot(1, 1, 1, xlabel="step of the execution plan", ylabel="MB", title=title)
    ax.step(steps, [r["live_bytes"] / 1e6 for r in profile.rows], where="post", label="alive after the step")
    ax.plot(steps, [r["during_bytes"] / 1e6 for r in profile.rows], "k.", markersize=4, label="alive during the step")
    ax.bar(steps, [r["new_bytes"] / 1e6 for r in profile.rows], alpha=0.3, label="allocated by the step")
    if profile.peak_step is not None:
        ax.axvline(profile.peak_step, color="red", linestyle="--", alpha=0.6,
                   label=f"peak {profile.peak_bytes / 1e6:.2f} MB")
    if len(steps) <= 40:
        ax.set_xticks(steps, [r["node"].rsplit("/", 1)[-1] for r in profile.rows], rotation=70, fontsize=7)
    return _finish(fig, path, ax)
