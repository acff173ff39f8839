"""Counters and compute times of the dynamics node, summarised as a diagnostic status.

The status is ERROR while any joint's external torque is above its collision threshold and for
``quiet_period`` seconds after the last collision ended (the joints named); else WARN without a
model, while joints are at their defaults (never heard of), for ``quiet_period`` seconds after
the last dropped or refused input or caught callback error, and while a lasting condition holds
(:attr:`Diagnostics.conditions`: stale odometry); else OK. Counters are safe to increment from
the node's several executor threads.
"""
import threading
import time

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
import numpy as np

from .throttled_log import clip

#: What the node counts: inputs received, dropped or refused, outputs published, errors caught.
COUNTERS = ('joint_states', 'dropped', 'published', 'trajectories', 'trajectories_rejected',
            'descriptions_refused', 'wrenches_rejected', 'stamps_backwards',
            'outputs_not_finite', 'requests_refused', 'callback_errors', 'odometry',
            'odometry_rejected', 'stances_unheld', 'efforts_dropped', 'observer_resets',
            'collisions', 'wrench_estimates_singular', 'payloads_identified', 'stale_states',
            'tip_outputs_decimated', 'trajectories_stopped_by_clock',
            'trajectories_superseded')
#: The counters that make the status WARN (for the quiet period after they last grew).
PROBLEMS = {'dropped': 'invalid joint states dropped',
            'trajectories_rejected': 'trajectories rejected',
            'descriptions_refused': 'robot descriptions refused',
            'wrenches_rejected': 'wrenches rejected',
            'outputs_not_finite': 'outputs not finite, not published',
            'callback_errors': 'errors caught in callbacks',
            'odometry_rejected': 'odometry rejected',
            'stances_unheld': 'contacts cannot hold the robot, gravity torques not published',
            'efforts_dropped': 'invalid efforts dropped',
            'observer_resets': 'external-torque observer reset (stamps backwards or a gap)',
            'stale_states': 'joint states older than command.max_state_age: no command '
                            'computed from them'}


class Diagnostics:
    """The node's counters and the compute time of each output pass since the last report."""

    def __init__(self, quiet_period=10.0):
        self.counters = dict.fromkeys(COUNTERS, 0)
        self.quiet_period = quiet_period
        self.defaulted = []                 # joints at their default positions (names)
        self.conditions = {}                # name -> note of a lasting WARN (stale odometry)
        self.values = {}                    # name -> extra value reported (the base state)
        self.colliding = ()                 # joints in collision now (names)
        self._collided = ()                 # joints of the last collision
        self._collision_end = None          # monotonic time the last collision ended
        self._last_problem = {}             # counter -> monotonic time it last grew
        self._compute_times = []
        self._lock = threading.Lock()

    def count(self, counter):
        """Add one to ``counter`` (one of :data:`COUNTERS`)."""
        with self._lock:
            self.counters[counter] += 1
            if counter in PROBLEMS:
                self._last_problem[counter] = time.monotonic()

    def collision(self, joints):
        """The joints (names) in collision from now on; () when none is."""
        if joints:
            self._collided = tuple(joints)
        elif self.colliding:
            self._collision_end = time.monotonic()
        self.colliding = tuple(joints)

    def published(self, seconds):
        """Count one output pass that took ``seconds`` [s]."""
        self.counters['published'] += 1
        if len(self._compute_times) < 100_000:
            self._compute_times.append(seconds)

    def report(self, name, model, stamp):
        """DiagnosticArray of one status ``name`` (see the module docstring for its level);
        the counters, outputs per second and compute times since the last report as values
        (which starts the next period).
        """
        status = DiagnosticStatus()
        status.name = name
        status.hardware_id = model.name if model is not None else ''
        now = time.monotonic()
        with self._lock:
            recent = [PROBLEMS[c] for c, t in self._last_problem.items()
                      if now - t < self.quiet_period]
            values = dict(self.counters)
        defaulted = list(self.defaulted)
        conditions = list(self.conditions.values())
        colliding, end = self.colliding, self._collision_end
        if colliding:
            status.level = DiagnosticStatus.ERROR
            status.message = f'collision: external torques above their thresholds at ' \
                             f'{clip(", ".join(colliding), 300)}'
        elif end is not None and now - end < self.quiet_period:
            status.level = DiagnosticStatus.ERROR
            status.message = f'collision {now - end:.1f} s ago at ' \
                             f'{clip(", ".join(self._collided), 300)}'
        elif model is None:
            status.level, status.message = DiagnosticStatus.WARN, 'no robot model loaded'
        elif recent or defaulted or conditions:
            notes = recent + conditions + (
                [f'{len(defaulted)} joints never heard of, at their defaults']
                if defaulted else [])
            status.level, status.message = DiagnosticStatus.WARN, '; '.join(notes)
        else:
            status.level, status.message = DiagnosticStatus.OK, 'ok'
        times, self._compute_times = self._compute_times, []
        values['outputs_per_second'] = len(times)
        if times:
            values['compute_time_median_ms'] = f'{1e3 * float(np.median(times)):.3f}'
            values['compute_time_max_ms'] = f'{1e3 * float(np.max(times)):.3f}'
        if defaulted:
            values['joints_at_default'] = clip(', '.join(defaulted))
        values.update(self.values)
        if colliding:
            values['joints_in_collision'] = clip(', '.join(colliding))
        status.values = [KeyValue(key=k, value=str(v)) for k, v in values.items()]
        array = DiagnosticArray()
        array.header.stamp = stamp
        array.status = [status]
        return array
