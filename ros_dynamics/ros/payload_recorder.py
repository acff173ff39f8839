"""Joint states recorded for ``~/identify_payload``: on the streaming path, into a bounded buffer.

The service (on the services node's threads) starts a :class:`Recording` and waits for it; the
node's streaming thread adds every :class:`~ros_dynamics.ros.effort_monitor.EffortSample` to it
(:meth:`PayloadRecorder.record`, a single attribute read when nothing records). A recording
ends when its stamps span the duration asked for or it holds ``max_samples`` joint states; it
is cut short (:attr:`Recording.problem`) when the model or the settings served change, or the
stamps go backwards or pause for more than ``max_gap``. One recording at a time.
"""
import threading
import time

import numpy as np


class RecorderBusy(RuntimeError):
    """A recording is already running."""


class Recording:
    """One recording: positions (n, nq), generalized efforts (n, nv), stamps (n,) [s]."""

    def __init__(self, model, dynamics, duration, max_samples, max_gap):
        self.model = model
        self.dynamics = dynamics          # the settings' DynamicSettings at the start
        self.duration = duration
        self.max_samples = max_samples
        self.max_gap = max_gap
        self.done = threading.Event()
        self.problem = None               # why it was cut short
        self.last_sample = time.monotonic()   # when a sample last came [monotonic s]
        self._t, self._q, self._tau = [], [], []

    def add(self, serving, q, sample):
        """Add one joint state (streaming thread), or end the recording."""
        if self.done.is_set():
            return
        t = self._t
        if serving.model is not self.model:
            self.stop('the robot description was replaced during the recording')
        elif serving.settings.dynamics is not self.dynamics:
            self.stop('parameters changed during the recording')
        elif t and sample.t < t[-1]:
            self.stop(f'joint-state stamps went backwards by {t[-1] - sample.t:.6g} s')
        elif t and sample.t - t[-1] > self.max_gap:
            self.stop(f'joint states paused for {sample.t - t[-1]:.6g} s (more than '
                      f'efforts.max_stamp_gap)')
        elif not t or sample.t > t[-1]:            # a repeated stamp is skipped
            t.append(sample.t)
            self._q.append(q.copy())
            self._tau.append(sample.tau)
            self.last_sample = time.monotonic()
            if t[-1] - t[0] >= self.duration or len(t) >= self.max_samples:
                self.done.set()

    def stop(self, problem=None):
        """End the recording, cut short for ``problem`` when given."""
        if not self.done.is_set():
            self.problem = problem
            self.done.set()

    def stalled(self, seconds):
        """True when no joint state came for ``seconds`` [s] of wall time."""
        return time.monotonic() - self.last_sample > seconds

    @property
    def samples(self):
        """Joint states recorded so far."""
        return len(self._t)

    def arrays(self):
        """``(t (n,), q (n, nq), tau (n, nv))`` of a finished recording."""
        return np.array(self._t), np.array(self._q), np.array(self._tau)


class PayloadRecorder:
    """At most one :class:`Recording` at a time, fed by the streaming thread."""

    def __init__(self):
        self._lock = threading.Lock()
        self._active = None

    def start(self, model, dynamics, duration, max_samples, max_gap):
        """A new :class:`Recording` (see its arguments); raises :class:`RecorderBusy` while
        another one runs.
        """
        with self._lock:
            if self._active is not None:
                raise RecorderBusy('another payload recording is running')
            self._active = Recording(model, dynamics, duration, max_samples, max_gap)
            return self._active

    def finish(self, recording):
        """Stop feeding ``recording`` (ended, or abandoned with a reason)."""
        recording.stop('abandoned')
        with self._lock:
            if self._active is recording:
                self._active = None

    def record(self, serving, q, sample):
        """Add a joint state to the running recording, if any (streaming thread)."""
        active = self._active
        if active is not None:
            active.add(serving, q, sample)
