"""Whatever arrives on one topic must not stall the 1 kHz path: a valid 10^5-point trajectory
(validated, splined and its feedforward computed off the executor) while joint states stream,
and a flood of trajectories from two publishers at once, of which the newest wins.
The trajectories come from another process (serialising the huge one takes its publisher a
second), so that the process timing the answers does nothing else.
"""
import os
import subprocess
import sys
import time

import numpy as np
import pytest
from robots import DEMO_ARM
from ros_helpers import NodeProcess, client_node, spin_until

rclpy = pytest.importorskip('rclpy', reason='ROS 2 (rclpy) is part of make env')
from builtin_interfaces.msg import Duration  # noqa: E402
from diagnostic_msgs.msg import DiagnosticArray  # noqa: E402
from rclpy.serialization import deserialize_message  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint  # noqa: E402

from ros_dynamics.engine import RobotModel  # noqa: E402

MODEL = RobotModel.from_urdf_file(DEMO_ARM)
NAMES = list(MODEL.joint_names)
Q = [0.2, -0.7, 0.9, 0.1, 0.3, 0.0]
NS = 'stall'
POINTS = 100_000


def huge_trajectory():
    """POINTS points 1 ms apart, a slow sine on every joint (valid: nothing to refuse)."""
    msg = JointTrajectory(joint_names=NAMES)
    t = np.arange(POINTS) * 0.001
    q = np.array(Q) + 0.1 * np.sin(t)[:, None]
    for k in range(POINTS):
        msg.points.append(JointTrajectoryPoint(
            positions=q[k].tolist(), time_from_start=Duration(sec=int(t[k]),
                                                              nanosec=int(k % 1000) * 1_000_000)))
    return msg


def test_a_huge_trajectory_does_not_stall_the_joint_states(tmp_path):
    node = NodeProcess('dynamics_node', '-r', f'__ns:=/{NS}', '-p', f'urdf_file:={DEMO_ARM}',
                       '-p', 'ik.seed_samples:=0', log_path=str(tmp_path / 'node.log'))
    try:
        with client_node('stall_client') as client:
            received, planned = [], []
            client.create_subscription(JointState, f'/{NS}/gravity_torques',
                                       lambda m: received.append(time.monotonic()), 1000)
            # Raw: deserialising 10^5 points holds this process for seconds (done after).
            client.create_subscription(JointTrajectory, f'/{NS}/feedforward_trajectory',
                                       planned.append, 10, raw=True)
            states = client.create_publisher(JointState, f'/{NS}/joint_states', 100)
            state = JointState(name=NAMES, position=Q)
            assert spin_until(client, lambda: received, 20.0, lambda: states.publish(state)), \
                node.output()
            sender = subprocess.Popen([sys.executable, __file__], stdout=subprocess.PIPE,
                                      text=True, cwd=os.path.dirname(__file__))
            assert sender.stdout.readline().strip() == 'ready'     # built and matched
            received.clear()
            start = time.monotonic()
            while time.monotonic() - start < 20.0 and not planned:
                states.publish(state)                     # about 500 Hz
                rclpy.spin_once(client, timeout_sec=0.002)
            end = time.monotonic() + 0.5                  # the states keep being answered
            while time.monotonic() < end or sender.poll() is None:     # while it exits
                assert time.monotonic() - start < 40.0, 'the sender did not exit'
                states.publish(state)
                rclpy.spin_once(client, timeout_sec=0.002)
            assert sender.returncode == 0
        assert planned, node.output()
        gaps = np.diff([start] + received)
        print(f'{len(received)} answers; longest gap {gaps.max() * 1e3:.0f} ms while a '
              f'{POINTS}-point trajectory was taken in')
        # Before: 0.9-1.7 s without an answer. The trajectory's work shares the interpreter
        # (its thread yields every 5 ms): gaps of 20-60 ms, and in some runs one of about
        # 0.32 s (cause not found), so the bound is between those and the stall it guards from.
        assert gaps.max() < 0.5
        # What the node wrote is a JointTrajectory rclpy reads: every point, with efforts.
        out = deserialize_message(planned[0], JointTrajectory)
        assert len(out.points) == POINTS and list(out.joint_names) == NAMES
        sent = huge_trajectory()
        for k in (0, 1, POINTS // 2, POINTS - 1):
            assert list(out.points[k].positions) == list(sent.points[k].positions)
            assert out.points[k].time_from_start == sent.points[k].time_from_start
        # Positions only: linear segments (the first point moves at the first slope, the last
        # is at rest), no acceleration -- as joint_trajectory_controller interpolates.
        q0, q1, q_end = (np.array(out.points[k].positions) for k in (0, 1, POINTS - 1))
        v0 = (q1 - q0) / 0.001
        np.testing.assert_allclose(out.points[0].effort, MODEL.inverse_dynamics(
            q0, v0, np.zeros(6)), atol=1e-9)
        np.testing.assert_allclose(out.points[-1].effort, MODEL.gravity_torques(q_end),
                                   atol=1e-9)
    finally:
        code = node.stop()
    assert code == 0, node.output()


def trajectory(points, offset):
    """``points`` points 1 ms apart around Q + ``offset`` (the offset tells trajectories apart)."""
    msg = JointTrajectory(joint_names=NAMES)
    for k in range(points):
        msg.points.append(JointTrajectoryPoint(
            positions=[x + offset + 1e-4 * k for x in Q],
            time_from_start=Duration(nanosec=k * 1_000_000)))
    return msg


def test_a_flood_of_trajectories_from_two_publishers_keeps_the_states_answered(tmp_path):
    """60 trajectories of 900 points, from two publishers in another process, back to back
    while joint states stream: every state keeps being answered (no gap over 0.5 s),
    trajectories waiting for the worker are replaced (counted as superseded), and the one played
    at the end is the last sent. This process only publishes states and times the answers.
    """
    node = NodeProcess('dynamics_node', '-r', f'__ns:=/{NS}_flood', '-p',
                       f'urdf_file:={DEMO_ARM}', '-p', 'ik.seed_samples:=0',
                       log_path=str(tmp_path / 'node.log'))
    try:
        with client_node('flood_client') as client:
            received, planned, reports = [], [], []
            client.create_subscription(JointState, f'/{NS}_flood/gravity_torques',
                                       lambda m: received.append(time.monotonic()), 1000)
            # Raw: the plans are read after the timing, not while it runs.
            client.create_subscription(JointTrajectory, f'/{NS}_flood/feedforward_trajectory',
                                       planned.append, 100, raw=True)
            client.create_subscription(DiagnosticArray, '/diagnostics', reports.append, 100)
            states = client.create_publisher(JointState, f'/{NS}_flood/joint_states', 100)
            state = JointState(name=NAMES, position=Q)
            assert spin_until(client, lambda: received, 20.0, lambda: states.publish(state)), \
                node.output()
            sender = subprocess.Popen([sys.executable, __file__, 'flood'],
                                      stdout=subprocess.PIPE, text=True,
                                      cwd=os.path.dirname(__file__))
            assert sender.stdout.readline().strip() == 'ready'     # built and matched
            received.clear()
            start = time.monotonic()
            last = FLOOD_OFFSET * (FLOOD - 1)

            def newest_played():
                return planned and deserialize_message(
                    planned[-1], JointTrajectory).points[0].positions[0] == Q[0] + last

            while sender.poll() is None or not newest_played():
                assert time.monotonic() - start < 40.0, node.output()
                states.publish(state)
                rclpy.spin_once(client, timeout_sec=0.002)
            assert sender.returncode == 0
            spin_until(client, lambda: False, 2.5, lambda: states.publish(state))

        gaps = np.diff([start] + received)
        counters = [{kv.key: kv.value for kv in status.values} for report in reports
                    for status in report.status if status.name.endswith('ros_dynamics: dynamics')]
        superseded = int(counters[-1].get('trajectories_superseded', 0))
        print(f'{len(received)} answers, longest gap {gaps.max() * 1e3:.0f} ms; '
              f'{len(planned)} of {FLOOD} trajectories planned, {superseded} superseded')
        assert gaps.max() < 0.5              # 8-10 ms, some runs one of 0.32 s (as above)
        assert superseded > 0 and len(planned) < FLOOD
        played = deserialize_message(planned[-1], JointTrajectory)
        np.testing.assert_allclose(played.points[-1].positions,
                                   trajectory(900, last).points[-1].positions, atol=0)
    finally:
        code = node.stop()
    assert code == 0, node.output()


#: The flood: FLOOD trajectories, the k-th offset by k * FLOOD_OFFSET [rad].
FLOOD = 60
FLOOD_OFFSET = 0.001


def send_flood():
    """The flood's two publishers, in a process of its own: prints 'ready' once the messages
    are built and the node subscribes, then publishes them back to back, alternating.
    """
    rclpy.init()
    node = rclpy.create_node('flood_sender')
    senders = [node.create_publisher(JointTrajectory, f'/{NS}_flood/joint_trajectory', 10)
               for _ in range(2)]
    flood = [trajectory(900, FLOOD_OFFSET * k) for k in range(FLOOD)]
    spin_until(node, lambda: all(p.get_subscription_count() for p in senders), 10.0)
    print('ready', flush=True)
    for k, msg in enumerate(flood):
        senders[k % 2].publish(msg)
    spin_until(node, lambda: False, 1.0)
    node.destroy_node()
    rclpy.shutdown()


def send():
    """The trajectory's publisher, in a process of its own: prints 'ready' once it has built
    the message and the node subscribes, then publishes it.
    """
    rclpy.init()
    node = rclpy.create_node('stall_sender')
    pub = node.create_publisher(JointTrajectory, f'/{NS}/joint_trajectory', 10)
    msg = huge_trajectory()
    spin_until(node, lambda: pub.get_subscription_count() > 0, 10.0)
    print('ready', flush=True)
    time.sleep(0.5)
    pub.publish(msg)
    spin_until(node, lambda: False, 2.0)
    node.destroy_node()
    rclpy.shutdown()


if __name__ == '__main__':
    send_flood() if sys.argv[1:] == ['flood'] else send()
