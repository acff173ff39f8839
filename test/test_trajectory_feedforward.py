"""Trajectory validation and the splines joint_trajectory_controller follows."""
from builtin_interfaces.msg import Duration
import numpy as np
import pytest
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from ros_dynamics.ros.trajectory_feedforward import InvalidTrajectory, from_message


def point(t, positions, velocities=(), accelerations=()):
    p = JointTrajectoryPoint()
    p.time_from_start = Duration(sec=int(t), nanosec=int(round((t % 1) * 1e9)))
    p.positions, p.velocities, p.accelerations = list(positions), list(velocities), \
        list(accelerations)
    return p


def trajectory(names, points):
    msg = JointTrajectory()
    msg.joint_names = list(names)
    msg.points = list(points)
    return msg


KNOWN = ('a', 'b', 'c')


@pytest.mark.parametrize('msg, match', [
    (trajectory([], [point(0, [])]), 'no joint names'),
    (trajectory(['a', 'a'], [point(0, [0, 0])]), 'duplicate joint names'),
    (trajectory(['a', 'x'], [point(0, [0, 0])]), r"unknown joints \['x'\]"),
    (trajectory(['a'], []), 'no points'),
    (trajectory(['a', 'b'], [point(0, [0])]), 'point 0: 1 positions for 2 joints'),
    (trajectory(['a'], [point(0, [0], [1]), point(1, [1], [1, 2])]),
     'point 1: 2 velocities for 1 joints'),
    (trajectory(['a'], [point(0, [0]), point(0, [1])]), 'time_from_start must increase'),
    (trajectory(['a'], [point(0, [0]), point(1, [float('nan')])]), 'point 1: positions hold NaN'),
    (trajectory(['a'], [point(0, [0], [float('inf')])]), 'velocities hold NaN, Inf'),
    (trajectory(['a'], [point(0, [1e101])]), r'point 0: positions hold NaN, Inf or values beyond'),
    (trajectory(['a'], [point(0, [0]), point(1e-9, [1e100])]),
     r"point 0: the spline's velocities are NaN, Inf or beyond 1e\+100"),
    (trajectory(['a'], [point(0, [0], [0]), point(1e-9, [1e95], [0])]),
     "the spline's accelerations"),
    (trajectory(['a', 'b', 'c'], [point(0, [0, 0, 0])]), 'more than trajectory.max_joints'),
    (trajectory(['a'], [point(k, [0]) for k in range(3)]), 'more than trajectory.max_points'),
])
def test_bad_trajectories_are_rejected_with_a_reason(msg, match):
    with pytest.raises(InvalidTrajectory, match=match):
        from_message(msg, KNOWN, max_points=2, max_joints=2)


def _fd_check(traj, t, h=1e-6):
    q, v, a = traj.sample(t)
    qp, vp, _ = traj.sample(t + h)
    qm, vm, _ = traj.sample(t - h)
    np.testing.assert_allclose((qp - qm) / (2 * h), v, atol=1e-6)
    np.testing.assert_allclose((vp - vm) / (2 * h), a, atol=1e-5)


def test_quintic_segments_meet_the_points_and_are_smooth():
    msg = trajectory(['a', 'b'], [point(0, [0, 1], [0.5, 0], [0, 1]),
                                  point(1.5, [1, -1], [0, 0.3], [0.2, 0]),
                                  point(2.5, [0.5, 0], [0, 0], [0, 0])])
    traj = from_message(msg, KNOWN)
    assert traj.order == 5
    for k, t in enumerate(traj.times[:-1]):
        q, v, a = traj.sample(t)
        np.testing.assert_allclose(q, traj.positions[k], atol=1e-12)
        np.testing.assert_allclose(v, traj.velocities[k], atol=1e-12)
        np.testing.assert_allclose(a, traj.accelerations[k], atol=1e-12)
    for t in (0.3, 1.2, 2.0):
        _fd_check(traj, t)
    q, v, a = traj.sample(10.0)             # held at the end, at rest
    np.testing.assert_allclose(q, [0.5, 0])
    assert not v.any() and not a.any()


def test_cubic_from_positions_and_velocities_fills_accelerations():
    msg = trajectory(['a'], [point(0, [0], [0]), point(1, [1], [0]), point(2, [0], [0])])
    traj = from_message(msg, KNOWN)
    assert traj.order == 3
    np.testing.assert_allclose(traj.accelerations[:, 0], [6, -6, 6])
    _fd_check(traj, 0.4)
    _fd_check(traj, 1.7)


def test_linear_from_positions_only():
    msg = trajectory(['a', 'c'], [point(0, [0, 0]), point(2, [1, -2]), point(3, [1, -2])])
    traj = from_message(msg, KNOWN)
    assert traj.order == 1
    np.testing.assert_allclose(traj.velocities, [[0.5, -1], [0, 0], [0, 0]])
    assert not traj.accelerations.any()
    q, v, _ = traj.sample(1.0)
    np.testing.assert_allclose(q, [0.5, -1])
    np.testing.assert_allclose(v, [0.5, -1])
