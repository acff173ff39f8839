"""Faults around a running node: publishers that vanish and return, a description swapped at
run time, a service client gone mid-call, SIGTERM; robot_description as a parameter.
"""
import signal
import time

import numpy as np
import pytest
from robots import DEMO_ARM
from ros_helpers import NodeProcess, client_node, spin_until

rclpy = pytest.importorskip('rclpy', reason='ROS 2 (rclpy) is part of make env')
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from std_msgs.msg import String  # noqa: E402

from ros_dynamics.engine import RobotModel  # noqa: E402
from ros_dynamics_interfaces.srv import SolveIK  # noqa: E402

MODEL = RobotModel.from_urdf_file(DEMO_ARM)
Q = [0.2, -0.7, 0.9, 0.1, 0.3, 0.0]


@pytest.fixture(scope='module')
def client():
    with client_node('fault_client') as node:
        yield node


def state():
    return JointState(name=list(MODEL.joint_names), position=Q)


def test_description_as_parameter_swap_at_run_time_and_vanishing_publishers(client, tmp_path):
    ns = 'fault1'
    params = tmp_path / 'params.yaml'
    xml = open(DEMO_ARM).read()
    indented = '\n'.join('      ' + line for line in xml.splitlines())
    params.write_text(f'/**:\n  ros__parameters:\n    robot_description: |\n{indented}\n')
    node = NodeProcess('dynamics_node', '-r', f'__ns:=/{ns}', '--params-file', str(params),
                       log_path=str(tmp_path / 'node.log'))
    try:
        got = []
        client.create_subscription(JointState, f'/{ns}/gravity_torques', got.append, 100)
        pub = client.create_publisher(JointState, f'/{ns}/joint_states', 10)
        assert spin_until(client, lambda: got, 20.0, lambda: pub.publish(state())), \
            node.output()
        np.testing.assert_allclose(got[-1].effort, MODEL.gravity_torques(np.array(Q)),
                                   atol=1e-9)
        assert 'from the robot_description parameter' in node.output()
        # The publisher vanishes, then a new one appears: the node answers it.
        client.destroy_publisher(pub)
        time.sleep(0.5)
        got.clear()
        pub = client.create_publisher(JointState, f'/{ns}/joint_states', 10)
        assert spin_until(client, lambda: got, 20.0, lambda: pub.publish(state()))
        # A valid new description (heavier forearm) is swapped in.
        heavier = xml.replace('<mass value="2.3"/>', '<mass value="4.6"/>')
        assert heavier != xml
        latched = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                             durability=DurabilityPolicy.TRANSIENT_LOCAL)
        desc = client.create_publisher(String, f'/{ns}/robot_description', latched)
        desc.publish(String(data=heavier))
        expected = RobotModel.from_urdf_string(heavier).gravity_torques(np.array(Q))
        assert spin_until(client, lambda: got and np.allclose(got[-1].effort, expected,
                                                              atol=1e-9), 20.0,
                          lambda: pub.publish(state())), node.output()
    finally:
        code = node.stop()
    assert code == 0, node.output()


def test_client_gone_mid_call_and_sigterm(client, tmp_path):
    ns = 'fault2'
    node = NodeProcess('dynamics_node', '-r', f'__ns:=/{ns}', '-p', f'urdf_file:={DEMO_ARM}',
                       log_path=str(tmp_path / 'node.log'))
    other = rclpy.create_node('fault_client_2')
    try:
        ik = other.create_client(SolveIK, f'/{ns}/ros_dynamics/solve_ik')
        assert ik.wait_for_service(timeout_sec=20.0), node.output()
        request = SolveIK.Request()
        request.target.pose.position.x = 9.0               # unreachable: a 1 s solve
        request.target.pose.orientation.w = 1.0
        request.timeout.sec = 1
        ik.call_async(request)
        rclpy.spin_once(other, timeout_sec=0.1)
        other.destroy_client(ik)
        other.destroy_node()                               # gone before the answer
        got = []
        client.create_subscription(JointState, f'/{ns}/gravity_torques', got.append, 100)
        pub = client.create_publisher(JointState, f'/{ns}/joint_states', 10)
        assert spin_until(client, lambda: len(got) > 5, 20.0, lambda: pub.publish(state()))
        ik2 = client.create_client(SolveIK, f'/{ns}/ros_dynamics/solve_ik')
        assert ik2.wait_for_service(timeout_sec=10.0)
        request.target.pose.position.x = 0.5
        request.target.pose.position.z = 0.3
        request.timeout.sec = 0
        for _ in range(4):                                  # resend if lost after discovery
            future = ik2.call_async(request)
            if spin_until(client, future.done, 5.0):
                break
        assert future.done() and future.result().error_code in (
            SolveIK.Response.SUCCESS, SolveIK.Response.NO_IK_SOLUTION, SolveIK.Response.TIMED_OUT)
        # SIGTERM: a clean and quick exit.
        started = time.monotonic()
        node.proc.send_signal(signal.SIGTERM)
        node.proc.wait(10)
        assert time.monotonic() - started < 5.0
        assert node.proc.returncode == 0, node.output()
    finally:
        if node.proc.poll() is None:
            node.stop()


def test_huge_and_backwards_joint_states(client, tmp_path):
    ns = 'fault3'
    node = NodeProcess('dynamics_node', '-r', f'__ns:=/{ns}', '-p', f'urdf_file:={DEMO_ARM}',
                       log_path=str(tmp_path / 'node.log'))
    try:
        got = []
        client.create_subscription(JointState, f'/{ns}/gravity_torques', got.append, 100)
        pub = client.create_publisher(JointState, f'/{ns}/joint_states', 10)
        huge = JointState(name=[f'extra_{i}' for i in range(10_000)] + list(MODEL.joint_names),
                          position=[0.0] * 10_000 + Q)
        huge.header.stamp.sec = 100
        assert spin_until(client, lambda: got, 20.0, lambda: pub.publish(huge)), node.output()
        np.testing.assert_allclose(got[-1].effort, MODEL.gravity_torques(np.array(Q)),
                                   atol=1e-9)
        older = state()
        older.header.stamp.sec = 50                          # the clock went backwards
        got.clear()
        assert spin_until(client, lambda: any(m.header.stamp.sec == 50 for m in got), 10.0,
                          lambda: pub.publish(older))
    finally:
        code = node.stop()
    assert code == 0, node.output()
    assert 'timestamps went backwards' in node.output()
    assert "name joints the model does not have: ['extra_0'" in node.output()
