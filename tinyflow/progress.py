"""Training progress: a tqdm bar in a terminal or a notebook; off a terminal (`| tee log`, CI) a bar would write a
line per redraw, so plain lines instead: the first epoch, about every tenth of the run, and the last."""
import sys
import time


class Progress:
    """Progress of `fit`: verbose=0 silent, 1 a bar (or a few plain lines off a terminal), 2 a line per epoch."""

    LINES_PER_RUN = 10  # plain lines off a terminal, besides the first and the last epoch
    MIN_SECONDS_BETWEEN_LINES = 30.0  # ... and at least one line this often in a long run

    def __init__(self, epochs, steps_per_epoch, verbose=1, stream=None, first_epoch=1):
        from tqdm.auto import tqdm
        self.epochs, self.verbose, self.stream = epochs, verbose, stream or sys.stdout
        notebook = any(cls.__module__ == "tqdm.notebook" for cls in tqdm.__mro__)
        use_bar = verbose == 1 and (notebook or self.stream.isatty())
        self.bar = tqdm(total=epochs * steps_per_epoch, initial=(first_epoch - 1) * steps_per_epoch, unit="batch",
                        dynamic_ncols=True, mininterval=0.5, file=self.stream) if use_bar else None
        self.every = max(1, epochs // self.LINES_PER_RUN)
        self.last_line, self.pending = time.monotonic(), None

    def start_epoch(self, epoch):
        """Note the epoch that starts."""
        if self.bar is not None:
            self.bar.set_description(f"epoch {epoch}/{self.epochs}", refresh=False)

    def batch(self, mean_loss):
        """One more batch done; `mean_loss` is the epoch's running mean."""
        if self.bar is not None:
            self.bar.set_postfix(loss=f"{mean_loss:.4f}", refresh=False)  # drawn at the bar's own pace
            self.bar.update(1)

    def end_epoch(self, epoch, logs):
        """The epoch's values: into the bar, or a plain line when one is due."""
        if self.bar is not None:
            self.bar.set_postfix({k: f"{v:.4f}" for k, v in logs.items()}, refresh=False)
            return
        self.pending = (epoch, logs)
        if (self.verbose == 2 or epoch in (1, self.epochs) or epoch % self.every == 0
                or time.monotonic() - self.last_line >= self.MIN_SECONDS_BETWEEN_LINES):  # a line is due
            self._line()

    def _line(self):
        if self.verbose and self.pending is not None:
            epoch, logs = self.pending
            values = "  ".join(f"{k} {v:.4f}" for k, v in logs.items())
            print(f"epoch {epoch}/{self.epochs}  {values}", file=self.stream, flush=True)
        self.pending, self.last_line = None, time.monotonic()

    def close(self):
        """Finish the bar, or print the last epoch's line if it is still due (early stopping)."""
        if self.bar is not None:
            self.bar.close()
        self._line()
