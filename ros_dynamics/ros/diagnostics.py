"""Counters and compute times of the dynamics node, summarised as a diagnostic status."""
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
import numpy as np

#: What the node counts: inputs received, dropped or refused, outputs published.
COUNTERS = ('joint_states', 'dropped', 'published', 'trajectories', 'trajectories_rejected',
            'descriptions_refused', 'wrenches_rejected', 'stamps_backwards')


class Diagnostics:
    """The node's counters and the compute time of each output pass since the last report."""

    def __init__(self):
        self.counters = dict.fromkeys(COUNTERS, 0)
        self._compute_times = []

    def count(self, counter):
        """Add one to ``counter`` (one of :data:`COUNTERS`)."""
        self.counters[counter] += 1

    def published(self, seconds):
        """Count one output pass that took ``seconds`` [s]."""
        self.counters['published'] += 1
        self._compute_times.append(seconds)

    def report(self, name, model, stamp):
        """DiagnosticArray of one status ``name``: WARN without a model or after dropped
        inputs, else OK; the counters, outputs per second and compute times since the last
        report as values (which starts the next period).
        """
        status = DiagnosticStatus()
        status.name = name
        status.hardware_id = model.name if model is not None else ''
        if model is None:
            status.level, status.message = DiagnosticStatus.WARN, 'no robot model loaded'
        elif self.counters['dropped'] or self.counters['trajectories_rejected']:
            status.level, status.message = DiagnosticStatus.WARN, 'invalid inputs dropped'
        else:
            status.level, status.message = DiagnosticStatus.OK, 'ok'
        times, self._compute_times = self._compute_times, []
        values = dict(self.counters)
        values['outputs_per_second'] = len(times)
        if times:
            values['compute_time_median_ms'] = f'{1e3 * float(np.median(times)):.3f}'
            values['compute_time_max_ms'] = f'{1e3 * float(np.max(times)):.3f}'
        status.values = [KeyValue(key=k, value=str(v)) for k, v in values.items()]
        array = DiagnosticArray()
        array.header.stamp = stamp
        array.status = [status]
        return array
