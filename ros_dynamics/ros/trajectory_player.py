"""The trajectory the dynamics node plays: received on ``joint_trajectory`` (serialised, read on
the node's trajectory thread: :mod:`.trajectory_cdr`), validated, its ``feedforward_trajectory``
published at once, then sampled for ``feedforward_command`` until its
last point (or until the model it was made for is replaced).
"""
import numpy as np
from rclpy.time import Time

from . import outputs
from .trajectory_cdr import read_trajectory, write_trajectory
from .trajectory_feedforward import InvalidTrajectory, from_data


class TrajectoryPlayer:
    """At most one trajectory playing, replaced whole (safe to read from the streaming path)."""

    def __init__(self, clock, publisher, diagnostics, log):
        self._clock = clock
        self._publisher = publisher
        self._diagnostics = diagnostics
        self._log = log
        self._playing = None         # (model, Trajectory, start Time, (index in q, in v))
        self._last_now = None        # the clock when the trajectory was last sampled

    def stop(self):
        """Play nothing (the model was replaced)."""
        self._playing = None

    def receive(self, serving, data, q):
        """Read the serialised JointTrajectory ``data`` (:mod:`.trajectory_cdr`), validate it
        against what is being served, publish its feedforward trajectory and play it; a bad one
        is rejected (counted, warned). Its joints are actuated joints; ``q`` (nq,) holds the
        other coordinates (a floating base's pose among them).
        """
        model, current = serving.model, serving.settings
        limits = current.limits
        try:
            received = read_trajectory(data, model.actuated_joint_names,
                                       limits.trajectory_points, limits.trajectory_joints)
            trajectory = from_data(received.data)
            joints = np.array([model.joint_index(j) for j in trajectory.joint_names], dtype=int)
            index = (model.joint_idx_q[joints], model.joint_idx_v[joints])
            efforts = outputs.feedforward_efforts(model, current, trajectory, index, q)
        except (ValueError, InvalidTrajectory, outputs.NonFiniteOutput) as err:
            self._diagnostics.count('trajectories_rejected')
            self._log.warning(f'rejected a trajectory: {err}')
            return
        self._publisher.publish(write_trajectory(received, efforts))
        stamp = Time.from_msg(received.stamp)
        start = stamp if stamp.nanoseconds > 0 else self._clock.now()
        self._playing = (model, trajectory, start, index)
        self._last_now = None
        self._diagnostics.count('trajectories')

    def feedforward(self, model, current, q):
        """The feedforward command of the trajectory playing now, or None."""
        playing = self._playing
        if playing is None or playing[0] is not model:
            return None
        _, trajectory, start, index = playing
        now, last = self._clock.now(), self._last_now
        self._last_now = now
        if last is not None and now < last:
            # The clock went back (a simulation reset): the trajectory belongs to the past.
            if self._playing is playing:
                self._playing = None
            self._diagnostics.count('trajectories_stopped_by_clock')
            self._log.warning('the clock went back: the trajectory playing is stopped')
            return None
        t = (now - start).nanoseconds * 1e-9
        if t > trajectory.duration:
            if self._playing is playing:
                self._playing = None
            return None
        return outputs.feedforward_command(model, current, q, trajectory, index, t)
