"""JointTrajectory read from and written to CDR by the node itself, checked against rclpy's own
serialisation (the middleware's format): every field, odd alignments, bad bytes refused.
"""
import numpy as np
import pytest

rclpy = pytest.importorskip('rclpy', reason='ROS 2 (rclpy) is part of make env')
from builtin_interfaces.msg import Duration  # noqa: E402
from rclpy.serialization import deserialize_message, serialize_message  # noqa: E402
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint  # noqa: E402

from ros_dynamics.ros.trajectory_cdr import (  # noqa: E402
    MalformedMessage,
    read_trajectory,
    write_trajectory,
)
from ros_dynamics.ros.trajectory_feedforward import InvalidTrajectory  # noqa: E402

NAMES = ('a', 'bé', 'joint_three')


def message(rng, names=NAMES, points=7, velocities=True,
            accelerations=False):
    msg = JointTrajectory(joint_names=list(names))
    msg.header.stamp.sec, msg.header.stamp.nanosec = 12, 345
    msg.header.frame_id = 'base_link_x'                 # odd lengths: the padding is exercised
    n = len(names)
    for k in range(points):
        p = JointTrajectoryPoint(positions=rng.normal(size=n).tolist(),
                                 time_from_start=Duration(sec=k, nanosec=7 * k))
        if velocities or k % 2:
            p.velocities = rng.normal(size=n).tolist()
        if accelerations:
            p.accelerations = rng.normal(size=n).tolist()
        p.effort = [1.0] * (k % 2)                      # replaced when written
        msg.points.append(p)
    return msg


@pytest.mark.parametrize('names, velocities, accelerations', [
    (('a', 'bé', 'joint_three'), True, False), (('a',), False, False),
    (('j1', 'j2', 'j3', 'j4', 'j5'), True, True), (('xy', 'z'), False, True)])
def test_read_then_written_back_is_what_rclpy_reads(names, velocities, accelerations):
    rng = np.random.default_rng(len(names))
    msg = message(rng, names, 7, velocities, accelerations)
    received = read_trajectory(serialize_message(msg), names, 100, 100)
    data = received.data
    assert data.joint_names == list(names) and received.frame_id == 'base_link_x'
    assert (received.stamp.sec, received.stamp.nanosec) == (12, 345)
    for k, p in enumerate(msg.points):
        np.testing.assert_array_equal(data.positions[k], p.positions)
        assert data.has_velocities[k] == bool(len(p.velocities))
        if len(p.velocities):
            np.testing.assert_array_equal(data.velocities[k], p.velocities)
        assert data.times[k] == p.time_from_start.sec + 1e-9 * p.time_from_start.nanosec
    efforts = rng.normal(size=(len(msg.points), len(names)))
    out = deserialize_message(write_trajectory(received, efforts), JointTrajectory)
    assert out.header == msg.header and list(out.joint_names) == list(names)
    for p, q, effort in zip(out.points, msg.points, efforts):
        assert list(p.positions) == list(q.positions)
        assert list(p.velocities) == list(q.velocities)
        assert list(p.accelerations) == list(q.accelerations)
        assert list(p.effort) == effort.tolist()
        assert p.time_from_start == q.time_from_start


def test_counts_are_refused_before_the_points_are_read_and_bad_bytes_are_typed():
    data = serialize_message(message(np.random.default_rng(0), points=50))
    with pytest.raises(InvalidTrajectory, match='50 points, more than trajectory.max_points'):
        read_trajectory(data, NAMES, 49, 100)
    with pytest.raises(InvalidTrajectory, match='3 joints, more than trajectory.max_joints'):
        read_trajectory(data, NAMES, 100, 2)
    for cut in (3, 10, 40, len(data) // 2, 3 * len(data) // 4):
        with pytest.raises(MalformedMessage):
            read_trajectory(data[:cut], NAMES, 100, 100)
    with pytest.raises(MalformedMessage, match='little-endian'):
        read_trajectory(b'\x00\x00\x00\x00' + data[4:], NAMES, 100, 100)
    # The names are checked before any point: an unknown joint is what is reported.
    with pytest.raises(InvalidTrajectory, match=r"unknown joints \['joint_three'\]"):
        read_trajectory(data, NAMES[:2], 100, 100)
    short = message(np.random.default_rng(1))
    short.points[3].positions = [1.0]
    with pytest.raises(InvalidTrajectory, match='point 3: 1 positions for 3 joints'):
        read_trajectory(serialize_message(short), NAMES, 100, 100)
