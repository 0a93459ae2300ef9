"""The memory plan of a run as a picture: bytes alive after each step, with the peak."""
from ..plot import figure


def plot_memory(profile, path=None, *, title="Memory during one run"):
    """A step plot of bytes alive per step of the plan (from Session.memory_profile)."""
    steps = [r["position"] for r in profile.rows]
    alive = [r["live_bytes"] / 1e6 for r in profile.rows]
    fig = figure(figsize=(max(6, 0.18 * len(steps)), 3.8))
    ax = fig.add_subplot(1, 1, 1)
    ax.step(steps, alive, where="post", label="alive after the step")
    ax.plot(steps, [r["during_bytes"] / 1e6 for r in profile.rows], "k.", markersize=4, label="alive during the step")
    ax.bar(steps, [r["new_bytes"] / 1e6 for r in profile.rows], alpha=0.3, label="allocated by the step")
    if profile.peak_step is not None:
        ax.axvline(profile.peak_step, color="red", linestyle="--", alpha=0.6,
                   label=f"peak {profile.peak_bytes / 1e6:.2f} MB")
    if len(steps) <= 40:
        ax.set_xticks(steps, [r["node"].rsplit("/", 1)[-1] for r in profile.rows], rotation=70, fontsize=7)
    ax.set_xlabel("step of the execution plan")
    ax.set_ylabel("MB")
    ax.set_title(title)
    ax.legend()
    ax.grid(alpha=0.3)
    fig.tight_layout()
    if path is not None:
        fig.savefig(path, dpi=120)
    return fig
