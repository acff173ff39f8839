"""The control path first: torque commands at every joint state, per-tip outputs at their own
rate, default tips at the ends of the moving chains, no command from a stale state, and a clock
going back (a simulation reset) recovered from -- the node as a separate process, real rclpy.
"""
import time

from builtin_interfaces.msg import Time
import numpy as np
import pytest
from robots import BAXTER, DEMO_ARM, PANDA, PR2, TALOS, UR5, erd, load
from ros_helpers import NodeProcess, client_node, spin_until

rclpy = pytest.importorskip('rclpy', reason='ROS 2 (rclpy) is part of make env')
from diagnostic_msgs.msg import DiagnosticArray  # noqa: E402
from geometry_msgs.msg import PoseStamped  # noqa: E402
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy  # noqa: E402
from rosgraph_msgs.msg import Clock  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from std_msgs.msg import Float64MultiArray  # noqa: E402

from ros_dynamics.ros.default_tips import default_tips  # noqa: E402
from ros_dynamics.ros.output_publisher import StampDecimator  # noqa: E402


@pytest.mark.parametrize('robot, expected', [
    (UR5, ('tool0',)),                                   # ROS-Industrial's tool flange
    (PANDA, ('panda_hand_tcp',)),                        # past the fingers, the hand's TCP
    (BAXTER, ('display', 'right_gripper', 'left_gripper')),   # head screen and both grippers
    (PR2, ('narrow_stereo_gazebo_r_stereo_camera_optical_frame', 'laser_tilt_link',
           'r_gripper_tool_frame', 'l_gripper_tool_frame')),
])
def test_default_tips_are_the_ends_of_the_moving_chains(robot, expected):
    model = load(erd(robot))
    assert default_tips(model) == expected
    assert len(model.leaf_frames) > len(expected)        # not every leaf


def test_default_tips_of_a_humanoid_and_of_a_robot_without_joints():
    talos = load(erd(TALOS))
    tips = default_tips(talos)
    assert {'left_sole_link', 'right_sole_link'} <= set(tips) and len(tips) == 5
    assert len(talos.leaf_frames) == 16
    from ros_dynamics.engine import RobotModel
    rigid = RobotModel.from_urdf_string('<robot name="r"><link name="a"/><link name="b"/>'
                                        '<joint name="j" type="fixed"><parent link="a"/>'
                                        '<child link="b"/></joint></robot>')
    assert default_tips(rigid) == ('b',)


def _stamp(ns):
    return Time(sec=ns // 10**9, nanosec=ns % 10**9)


def test_the_decimator_lets_through_one_stamp_per_period_and_restarts_when_time_goes_back():
    decimator = StampDecimator()
    ms = 1_000_000
    due = [decimator.due(_stamp(100 * 10**9 + k * ms), 100.0) for k in range(100)]
    assert np.flatnonzero(due).tolist() == list(range(0, 100, 10))
    assert decimator.due(_stamp(5 * 10**9), 100.0)               # went back: due at once
    assert not decimator.due(_stamp(5 * 10**9 + 3 * ms), 100.0)
    assert all(decimator.due(_stamp(6 * 10**9 + k), 0.0) for k in range(5))   # 0: always


class Loop:
    """Joint states in, the node's torques, commands, poses and diagnostics out."""

    def __init__(self, client, ns, names, tips=()):
        self.client, self.ns, self.names = client, ns, list(names)
        self.torques, self.commands, self.diagnostics = {}, [], []
        self.poses = {tip: [] for tip in tips}
        client.create_subscription(JointState, f'/{ns}/gravity_torques',
                                   lambda m: self.torques.__setitem__(_ns(m.header.stamp), m),
                                   1000)
        client.create_subscription(Float64MultiArray, f'/{ns}/gravity_command',
                                   self.commands.append, 1000)
        for tip in tips:
            client.create_subscription(PoseStamped, f'/{ns}/poses/{tip}',
                                       self.poses[tip].append, 1000)
        client.create_subscription(DiagnosticArray, '/diagnostics', self.diagnostics.append, 10)
        self.pub = client.create_publisher(JointState, f'/{ns}/joint_states', 1000)

    def stream(self, q, stamps_ns, burst=25, keep_up=0):
        """Publish one state per stamp, ``burst`` at a time, each burst once answered; returns
        the stamps sent. ``keep_up`` [ns]: when publishing has fallen behind the stamps (a busy
        machine), the remaining stamps move later by whole multiples of it, so that a state's
        age measures the node, not this loop.
        """
        stamps_ns = np.array(stamps_ns, dtype=np.int64)
        for start in range(0, len(stamps_ns), burst):
            behind = time.time_ns() - int(stamps_ns[start])
            if keep_up and behind > 0:
                stamps_ns[start:] += -(-behind // keep_up) * keep_up
            elif keep_up and behind < 0:     # not ahead of the clock either: paced
                spin_until(self.client, lambda: False, -behind * 1e-9)
            chunk = stamps_ns[start:start + burst]
            for k, ns in enumerate(chunk):
                msg = JointState(name=self.names, position=q[start + k].tolist())
                msg.header.stamp = _stamp(int(ns))
                self.pub.publish(msg)
            last = int(chunk[-1])
            assert spin_until(self.client, lambda last=last: last in self.torques, 20.0), start
        spin_until(self.client, lambda: False, 0.2)
        return stamps_ns

    def wait_for_node(self, step=None):
        """Wait for the node's first diagnostics (it is up, its subscriptions matched);
        ``step()`` is called meanwhile (to publish a simulated clock).
        """
        assert spin_until(self.client, lambda: len(self.diagnostics) > 0, 30.0, step)
        spin_until(self.client, lambda: False, 0.5)

    def counter(self, key):
        values = [{kv.key: kv.value for kv in s.values} for d in self.diagnostics
                  for s in d.status if s.name == f'/{self.ns}/ros_dynamics: dynamics']
        return int(values[-1].get(key, 0)) if values else 0

    def diagnostics_after(self, seconds=1.3):
        """Wait for a diagnostics report after now; returns its status."""
        n = len(self.diagnostics)
        assert spin_until(self.client, lambda: len(self.diagnostics) > n + 1, seconds + 5.0)
        return [s for s in self.diagnostics[-1].status
                if s.name == f'/{self.ns}/ros_dynamics: dynamics'][0]


def _ns(stamp):
    return stamp.sec * 10**9 + stamp.nanosec


@pytest.fixture(scope='module')
def client():
    with client_node('control_path_client') as node:
        yield node


def test_a_many_frame_robot_gets_a_command_for_every_joint_state_with_default_parameters(
        client, tmp_path):
    """Baxter (29 leaf links) with the node's defaults: every joint state of a 1 kHz stream
    (stamps 1 ms apart, on the node's clock) gets its gravity torques and command; the
    default tips' poses come at tip_outputs_rate (100 Hz of stamps: one state in ten).
    """
    model = load(erd(BAXTER))
    tips = default_tips(model)
    node = NodeProcess('dynamics_node', '-r', '__ns:=/baxter', '-p',
                       f'urdf_file:={erd(BAXTER)}', '-p', 'ik.seed_samples:=0',
                       log_path=str(tmp_path / 'node.log'))
    try:
        loop = Loop(client, 'baxter', model.actuated_joint_names, tips)
        n = 2000
        q = model.random_configuration(3, size=n)[:, model.actuated_q_index]
        loop.wait_for_node()
        # Stamps 1 ms apart; bursts of 20 moved on by whole 10 ms periods if this loop falls
        # behind, so every tenth stamp still opens a 100 Hz period.
        stamps = loop.stream(q, time.time_ns() + np.arange(n) * 1_000_000, burst=20,
                             keep_up=10_000_000)
        loop.diagnostics_after()                              # counters past the last state
        stale = loop.counter('stale_states')
        assert sorted(loop.torques) == stamps.tolist()        # every state answered
        assert len(loop.commands) == n - stale and stale < n // 20, (stale, node.output())
        expected = model.gravity_torques(model.q_from_names(model.actuated_joint_names,
                                                            q[-1]))
        np.testing.assert_allclose(loop.torques[int(stamps[-1])].effort,
                                   expected[model.actuated_v_index], atol=1e-9)
        for tip in tips:
            got = sorted(_ns(m.header.stamp) for m in loop.poses[tip])
            assert got == stamps[::10].tolist(), tip          # 100 Hz on the stamps
        assert loop.counter('tip_outputs_decimated') == n - n // 10
    finally:
        assert node.stop() == 0, node.output()


def test_no_command_from_a_stale_state_and_the_loop_recovers(client, tmp_path):
    """A joint state stamped 0.5 s ago (older than command.max_state_age, 0.1 s by default),
    or 5 s ahead of the node's clock, gets its stamped gravity torques but no command:
    counted, warned, diagnostics WARN; the next fresh one gets its command again.
    """
    model = load(DEMO_ARM)
    node = NodeProcess('dynamics_node', '-r', '__ns:=/stale', '-p', f'urdf_file:={DEMO_ARM}',
                       '-p', 'ik.seed_samples:=0', log_path=str(tmp_path / 'node.log'))
    try:
        loop = Loop(client, 'stale', model.joint_names)
        loop.wait_for_node()
        q = model.random_configuration(4, size=4)
        loop.stream(q[:1], [time.time_ns()])                   # fresh: commanded
        assert spin_until(client, lambda: len(loop.commands) == 1, 5.0)
        old = time.time_ns() - 500_000_000
        loop.stream(q[1:2], [old])
        assert len(loop.commands) == 1                         # stale: no command
        np.testing.assert_allclose(loop.torques[old].effort, model.gravity_torques(q[1]),
                                   atol=1e-9)                  # torques, stamped: published
        # Stamped 5 s ahead of the node's clock (from before a clock went back): the same.
        ahead = time.time_ns() + 5_000_000_000
        loop.stream(q[2:3], [ahead])
        assert len(loop.commands) == 1
        status = loop.diagnostics_after()
        assert loop.counter('stale_states') == 2
        assert status.level == status.WARN and 'max_state_age' in status.message
        loop.stream(q[3:], [time.time_ns()])
        assert spin_until(client, lambda: len(loop.commands) == 2, 5.0)
        np.testing.assert_allclose(loop.commands[-1].data, model.gravity_torques(q[3]),
                                   atol=1e-9)
    finally:
        assert node.stop() == 0, node.output()
    assert 'no command computed from it' in node.output()


def test_simulated_time_going_back_is_a_reset_the_loop_recovers_from(client, tmp_path):
    """With use_sim_time, /clock at 100 s then back to 1 s (a simulation reset): states stamped
    in the new time are commanded at once, and the per-tip outputs restart at the first one.
    """
    model = load(DEMO_ARM)
    node = NodeProcess('dynamics_node', '-r', '__ns:=/reset', '-p', f'urdf_file:={DEMO_ARM}',
                       '-p', 'ik.seed_samples:=0', '-p', 'use_sim_time:=true',
                       log_path=str(tmp_path / 'node.log'))
    clock = client.create_publisher(Clock, '/clock', QoSProfile(
        depth=1, reliability=ReliabilityPolicy.RELIABLE,
        durability=DurabilityPolicy.VOLATILE))
    try:
        loop = Loop(client, 'reset', model.joint_names, ('tool0',))
        t = [90 * 10**9]

        def tick():                       # simulated time running until the node reports
            t[0] += 10_000_000
            clock.publish(Clock(clock=_stamp(t[0])))

        loop.wait_for_node(tick)
        q = model.random_configuration(5, size=40)

        def run(t0_ns):
            stamps = t0_ns + np.arange(20) * 1_000_000
            for k in range(20):
                clock.publish(Clock(clock=_stamp(int(stamps[k]))))
            spin_until(client, lambda: False, 0.3)
            return stamps

        before = run(100 * 10**9)
        clock.publish(Clock(clock=_stamp(int(before[-1]))))
        loop.stream(q[:20], before, burst=20)
        commands = len(loop.commands)
        assert commands == 20, node.output()
        after = run(1 * 10**9)
        clock.publish(Clock(clock=_stamp(int(after[-1]))))
        spin_until(client, lambda: False, 0.3)
        loop.stream(q[20:], after, burst=20)
        assert len(loop.commands) == 40, node.output()         # none judged stale
        got = [_ns(m.header.stamp) for m in loop.poses['tool0']]
        assert got == [int(before[0]), int(before[10]), int(after[0]), int(after[10])]
    finally:
        assert node.stop() == 0, node.output()
