"""Joint trajectories as a joint_trajectory_controller follows them, for torque feedforward.

A trajectory is validated and turned into arrays: times (k,) [s] from its start, and positions,
velocities and accelerations (k, n) of its joints. Where the message leaves velocities or
accelerations out, they come from the spline joint_trajectory_controller interpolates with:
positions only -> linear segments (velocity = the slope of the segment a point starts, zero
acceleration); positions and velocities -> cubic Hermite segments; all three -> quintic segments.

Every number is checked before any arithmetic (finite, of magnitude at most the engine's
:data:`~ros_dynamics.engine.kinematics.MAX_JOINT_VALUE`), and so are the velocities and
accelerations the spline gives (two points 1 ns apart can make them overflow).
"""
from dataclasses import dataclass

import numpy as np

from ..engine.kinematics import MAX_JOINT_VALUE


class InvalidTrajectory(ValueError):
    """A trajectory that must be rejected; the message says why."""


@dataclass(frozen=True)
class Trajectory:
    """A validated trajectory of some joints (names in the message's order)."""

    joint_names: tuple
    times: np.ndarray          # (k,) [s] from the trajectory start, increasing
    positions: np.ndarray      # (k, n)
    velocities: np.ndarray     # (k, n)
    accelerations: np.ndarray  # (k, n)
    order: int                 # 1 linear, 3 cubic, 5 quintic

    @property
    def duration(self):
        """Time of the last point [s]."""
        return float(self.times[-1])

    def sample(self, t):
        """Positions, velocities, accelerations (n,) at time ``t`` [s] from the start.

        Before the first point and after the last one the robot is held there (zero velocity
        and acceleration).
        """
        times = self.times
        n = self.positions.shape[1]
        if t < times[0] or len(times) == 1:
            return self.positions[0], np.zeros(n), np.zeros(n)
        if t >= times[-1]:
            return self.positions[-1], np.zeros(n), np.zeros(n)
        k = int(np.searchsorted(times, t, side='right')) - 1
        return _segment(self, k, t - times[k])


@dataclass
class TrajectoryData:
    """The numbers of a JointTrajectory as read (from a message, or from its serialised form by
    :mod:`.trajectory_cdr`), before validation: times (k,) [s], positions, velocities and
    accelerations (k, n) (zero where a point has none), which points have velocities and
    accelerations (k,), and each point's time_from_start as (sec, nanosec) (k, 2).
    """

    joint_names: list
    times: np.ndarray
    positions: np.ndarray
    velocities: np.ndarray
    accelerations: np.ndarray
    has_velocities: np.ndarray
    has_accelerations: np.ndarray
    stamps: np.ndarray


def check_header(names, points, known_joints, max_points, max_joints):
    """Raise :class:`InvalidTrajectory` for no joint names, too many joints or points (before
    they are read), duplicate or unknown joints.
    """
    if not names:
        raise InvalidTrajectory('no joint names')
    if len(names) > max_joints:
        raise InvalidTrajectory(f'{len(names)} joints, more than trajectory.max_joints '
                                f'({max_joints})')
    if points > max_points:
        raise InvalidTrajectory(f'{points} points, more than trajectory.max_points '
                                f'({max_points})')
    if len(set(names)) != len(names):
        raise InvalidTrajectory(f'duplicate joint names in {names[:20]}')
    known = set(known_joints)
    unknown = [j for j in names if j not in known]
    if unknown:
        raise InvalidTrajectory(f'unknown joints {unknown[:20]}; the model has '
                                f'{list(known_joints)[:20]}')


def empty_data(names, count):
    """A :class:`TrajectoryData` of ``count`` points to fill."""
    n = len(names)
    return TrajectoryData(list(names), np.empty(count), np.empty((count, n)),
                          np.zeros((count, n)), np.zeros((count, n)),
                          np.zeros(count, dtype=bool), np.zeros(count, dtype=bool),
                          np.empty((count, 2), dtype=np.int64))


def put_point(data, i, positions, velocities, accelerations, sec, nanosec):
    """Point ``i`` of ``data``; InvalidTrajectory when an array has the wrong length."""
    n = len(data.joint_names)
    for field, values in (('positions', positions), ('velocities', velocities),
                          ('accelerations', accelerations)):
        if (field == 'positions' or len(values)) and len(values) != n:
            raise InvalidTrajectory(f'point {i}: {len(values)} {field} for {n} joints')
    data.positions[i] = positions
    if len(velocities):
        data.velocities[i], data.has_velocities[i] = velocities, True
    if len(accelerations):
        data.accelerations[i], data.has_accelerations[i] = accelerations, True
    data.times[i] = sec + nanosec * 1e-9
    data.stamps[i] = sec, nanosec


def from_message(msg, known_joints, max_points=100_000, max_joints=10_000):
    """Validate a trajectory_msgs/JointTrajectory and build a :class:`Trajectory`
    (:func:`from_data`).
    """
    names = list(msg.joint_names)
    check_header(names, len(msg.points), known_joints, max_points, max_joints)
    data = empty_data(names, len(msg.points))
    for i, p in enumerate(msg.points):
        put_point(data, i, p.positions, p.velocities, p.accelerations, p.time_from_start.sec,
                  p.time_from_start.nanosec)
    return from_data(data)


def from_data(data):
    """Validate a :class:`TrajectoryData` whose joint names and array lengths were checked as
    it was read (:func:`check_header`, :func:`put_point`) and build a :class:`Trajectory`.

    Raises :class:`InvalidTrajectory` naming the fault: no points, time_from_start not
    increasing, NaN/Inf or huge values, given or derived.
    """
    names = data.joint_names
    if not len(data.times):
        raise InvalidTrajectory('no points')
    has_vel = bool(data.has_velocities.all())
    has_acc = has_vel and bool(data.has_accelerations.all())
    bad = [~np.all(np.abs(values) <= MAX_JOINT_VALUE, axis=1)
           for values in (data.positions, data.velocities, data.accelerations)]
    if any(b.any() for b in bad):
        point = int(np.argmax(np.logical_or.reduce(bad)))
        field = ('positions', 'velocities', 'accelerations')[
            next(k for k in range(3) if bad[k][point])]
        raise InvalidTrajectory(f'point {point}: {field} hold NaN, Inf or values beyond '
                                f'{MAX_JOINT_VALUE:g}')
    times = data.times
    if np.any(np.diff(times) <= 0):
        bad = int(np.argmax(np.diff(times) <= 0)) + 1
        raise InvalidTrajectory(f'time_from_start must increase: point {bad} at '
                                f'{times[bad]:.6g} s follows {times[bad - 1]:.6g} s')
    vel = data.velocities if has_vel else np.zeros_like(data.positions)
    acc = data.accelerations if has_acc else np.zeros_like(data.positions)
    order = 5 if has_acc else 3 if has_vel else 1
    with np.errstate(all='ignore'):               # overflow is checked on the results
        traj = _derive(names, times, data.positions, vel, acc, order)
    for field, values in (('velocities', traj.velocities),
                          ('accelerations', traj.accelerations)):
        bad = ~(np.abs(values) <= MAX_JOINT_VALUE)
        if bad.any():
            point = int(np.argmax(bad.any(axis=1)))
            raise InvalidTrajectory(f'point {point}: the spline\'s {field} are NaN, Inf or '
                                    f'beyond {MAX_JOINT_VALUE:g} (points too close in time?)')
    return traj


def _derive(names, times, pos, vel, acc, order):
    """The :class:`Trajectory`, with the velocities and accelerations the spline gives where
    the message left them out.
    """
    n = len(names)
    traj = Trajectory(tuple(names), times, pos, vel, acc, order)
    if order == 1:
        slopes = np.diff(pos, axis=0) / np.diff(times)[:, None] if len(times) > 1 \
            else np.zeros((0, n))
        vel = np.vstack([slopes, np.zeros((1, n))])
        traj = Trajectory(tuple(names), times, pos, vel, np.zeros_like(pos), 1)
    elif order == 3:
        acc = np.array([_segment(traj, min(k, len(times) - 2), 0.0)[2] if k < len(times) - 1
                        else _segment(traj, k - 1, times[k] - times[k - 1])[2]
                        for k in range(len(times))]) if len(times) > 1 else np.zeros_like(pos)
        traj = Trajectory(tuple(names), times, pos, vel, acc, 3)
    return traj


def _segment(traj, k, s):
    """Sample segment k (points k, k+1) at ``s`` seconds into it."""
    T = traj.times[k + 1] - traj.times[k]
    q0, q1 = traj.positions[k], traj.positions[k + 1]
    if traj.order == 1:
        v = (q1 - q0) / T
        return q0 + v * s, v, np.zeros_like(v)
    v0, v1 = traj.velocities[k], traj.velocities[k + 1]
    if traj.order == 3:
        c2 = (3 * (q1 - q0) / T - 2 * v0 - v1) / T
        c3 = (2 * (q0 - q1) / T + v0 + v1) / (T * T)
        return (q0 + v0 * s + c2 * s * s + c3 * s ** 3, v0 + 2 * c2 * s + 3 * c3 * s * s,
                2 * c2 + 6 * c3 * s)
    a0, a1 = traj.accelerations[k], traj.accelerations[k + 1]
    T2, T3 = T * T, T ** 3
    c3 = (20 * (q1 - q0) - (8 * v1 + 12 * v0) * T - (3 * a0 - a1) * T2) / (2 * T3)
    c4 = (30 * (q0 - q1) + (14 * v1 + 16 * v0) * T + (3 * a0 - 2 * a1) * T2) / (2 * T3 * T)
    c5 = (12 * (q1 - q0) - 6 * (v1 + v0) * T - (a0 - a1) * T2) / (2 * T3 * T2)
    return (q0 + v0 * s + 0.5 * a0 * s * s + c3 * s ** 3 + c4 * s ** 4 + c5 * s ** 5,
            v0 + a0 * s + 3 * c3 * s * s + 4 * c4 * s ** 3 + 5 * c5 * s ** 4,
            a0 + 6 * c3 * s + 12 * c4 * s * s + 20 * c5 * s ** 3)
