"""The collective watchdog: a collective that waits past the timeout aborts the job, naming who never arrived.

A daemon thread per process asks, shortly before the timeout and over a private duplicate of the communicator, every
other rank where it is (docs/distributed.md); a rank that does not answer has probably died. Asking needs
MPI_THREAD_MULTIPLE; without it the job is still aborted, without answers."""
import atexit
import contextlib
import sys
import threading
import time

from ..nodes.node import site_text, user_site
from .mpi import _state, abort, rank, world_size

QUESTION, ANSWER = 7001, 7002  # tags on the watchdog's own communicator


class Watchdog:
    """The watchdog thread of this process, armed by `guarded` around every collective."""

    def __init__(self, comm, MPI):
        self.MPI = MPI
        self.control = comm.Dup() if MPI.Query_thread() == MPI.THREAD_MULTIPLE else None
        self.main = threading.get_ident()  # the thread that runs the program (it called init)
        self.deadline, self.what, self.array, self.started = None, "", None, 0.0
        self.last = None     # (name, number, when it finished) of the last collective
        self.asked = 0       # the number of the collective whose wait made us ask the other ranks
        self.answers = {}    # rank -> (number asked about, its answer)
        self.sending = []    # isend requests in flight (their buffers must stay alive)
        self.lock = threading.Lock()
        self.stopped = False
        atexit.register(self.stop)  # runs before mpi4py finalizes MPI: no MPI call after that
        threading.Thread(target=self._watch, name="tinyflow-collective-watchdog", daemon=True).start()

    def arm(self, what, array=None):
        """A collective (on `array`, described only if it times out) starts now."""
        self.what, self.array, self.started = what, array, time.monotonic()
        self.deadline = self.started + _state.timeout

    def disarm(self):
        """The collective finished."""
        self.deadline = None
        self.last = (self.what, _state.collectives, time.monotonic())

    def stop(self):
        """Stop for good (at exit)."""
        with self.lock:
            self.stopped = True

    def _watch(self):
        while True:
            time.sleep(min(0.25, _state.timeout / 8))
            with self.lock:
                if self.stopped:
                    return
                if self.control is not None:
                    try:
                        self._exchange()
                    except Exception:  # noqa: BLE001 - a broken channel must not stop the timeout below
                        self.control = None
                deadline = self.deadline
                if deadline is None:
                    continue
                now, number = time.monotonic(), _state.collectives
                ask_from = deadline - min(2.0, _state.timeout / 2)  # time for the answers to come back
                if self.control is not None and self.asked != number and now > ask_from:
                    self.asked = number  # ask the other ranks where they are
                    self.sending += [self.control.isend(number, dest=other, tag=QUESTION)
                                     for other in range(world_size()) if other != rank()]
                if now > deadline and self.deadline == deadline:
                    abort(self._report(number))

    def _exchange(self):
        """Answer the other ranks' questions and collect the answers to ours."""
        status = self.MPI.Status()
        while self.control.iprobe(source=self.MPI.ANY_SOURCE, tag=QUESTION, status=status):
            asker = status.Get_source()
            number = self.control.recv(source=asker, tag=QUESTION)
            self.sending.append(self.control.isend((number, self._where()), dest=asker, tag=ANSWER))
        while self.control.iprobe(source=self.MPI.ANY_SOURCE, tag=ANSWER, status=status):
            source = status.Get_source()
            self.answers[source] = self.control.recv(source=source, tag=ANSWER)
        self.sending = [request for request in self.sending if not request.Test()]

    def _site(self):
        frame = sys._current_frames().get(self.main)
        return site_text(user_site(frame=frame)) if frame is not None else "an unknown line (the main thread has ended)"

    def _where(self):
        """This rank's answer: in which collective it waits, or where it is and its last collective."""
        now = time.monotonic()
        if self.deadline is not None:
            return {"waiting": _state.collectives, "what": self.what, "site": self._site(),
                    "for": now - self.started}
        return {"waiting": 0, "site": self._site(),
                "last": None if self.last is None else (self.last[0], self.last[1], now - self.last[2])}

    def _report(self, number):
        what = self.what if self.array is None else f"{self.what} of {self.array.shape} {self.array.dtype}"
        headline = (f"{what} (collective #{number}, at {self._site()}) waited more than {_state.timeout:g} s for the "
                    "other ranks")
        advice = "Aborting the job. (Set TINYFLOW_COLLECTIVE_TIMEOUT or init(timeout=...) if the step is just slow.)"
        if self.control is None:
            return (f"{headline}; they could not be asked where they are (this MPI library has no thread support): "
                    f"one of them has probably failed or stopped calling the same collectives. {advice}")
        missing, lines = [], []
        for other in (r for r in range(world_size()) if r != rank()):
            asked, answer = self.answers.get(other, (None, None))
            if asked == number and answer["waiting"] == number:
                lines.append(f"rank {other} waits in {answer['what']} at {answer['site']} too")
                continue
            missing.append(other)
            if asked != number:
                lines.append(f"rank {other} did not answer (it has probably died, or is stuck in C code)")
            elif answer["waiting"]:
                lines.append(f"rank {other} waits in another collective, {answer['what']} (collective "
                             f"#{answer['waiting']}, at {answer['site']}), for {answer['for']:.1f} s")
            else:
                last = answer["last"]
                done = (f"its last collective was #{last[1]}, {last[0]}, {last[2]:.1f} s ago" if last
                        else "it has made no collective call yet")
                lines.append(f"rank {other} is not in a collective: it is at {answer['site']}; {done}")
        names = f"rank {missing[0]}" if len(missing) == 1 else "ranks " + ", ".join(map(str, missing))
        return f"{headline}: {names} never arrived. {'; '.join(lines)}. {advice}"


_state.watchdog_class = Watchdog  # what mpi.init starts


@contextlib.contextmanager
def guarded(what, array=None):
    """`with guarded("all_reduce", array):` runs a collective under the watchdog (no-op for one process)."""
    watchdog = _state.watchdog
    if watchdog is not None:
        watchdog.arm(what, array)  # the array is described only on a timeout: str(dtype) costs microseconds
    try:
        yield
    finally:
        if watchdog is not None:
            watchdog.disarm()
