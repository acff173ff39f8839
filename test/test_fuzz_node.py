"""Random JointState, JointTrajectory and SolveIK messages fed into a running node (hypothesis):
after each one a good joint state is still answered, and the process never stops.
"""
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
import numpy as np
import pytest
from robots import DEMO_ARM
from ros_helpers import NodeProcess, spin_until

rclpy = pytest.importorskip('rclpy', reason='ROS 2 (rclpy) is part of make env')
from builtin_interfaces.msg import Duration  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint  # noqa: E402

from ros_dynamics.engine import RobotModel  # noqa: E402
from ros_dynamics_interfaces.srv import SolveIK  # noqa: E402

MODEL = RobotModel.from_urdf_file(DEMO_ARM)
NAMES = list(MODEL.joint_names)
NS = 'fuzz'
Q = [0.2, -0.7, 0.9, 0.1, 0.3, 0.0]

numbers = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.sampled_from(
    [0.0, 1e-300, 1e100, -1e101, 1e308, 2.0 ** 63]))
names = st.one_of(st.sampled_from(NAMES), st.text(max_size=20))
lists = st.lists(numbers, max_size=8)
joint_states = st.builds(JointState, name=st.lists(names, max_size=8), position=lists,
                         velocity=lists, effort=lists)
durations = st.builds(Duration, sec=st.integers(-2 ** 31, 2 ** 31 - 1),
                      nanosec=st.integers(0, 2 ** 32 - 1))
points = st.builds(JointTrajectoryPoint, positions=lists, velocities=lists,
                   accelerations=lists, time_from_start=durations)
trajectories = st.builds(JointTrajectory, joint_names=st.lists(names, max_size=6),
                         points=st.lists(points, max_size=6))


@st.composite
def ik_requests(draw):
    req = SolveIK.Request()
    p, o = req.target.pose.position, req.target.pose.orientation
    p.x, p.y, p.z, o.x, o.y, o.z, o.w = (draw(numbers) for _ in range(7))
    req.target.header.frame_id = draw(st.one_of(st.just(''), st.sampled_from(
        list(MODEL.frame_names)), st.text(max_size=10)))
    req.tip_frame = draw(st.one_of(st.just(''), st.text(max_size=10)))
    req.seed = draw(joint_states)
    req.position_tolerance, req.orientation_tolerance = draw(numbers), draw(numbers)
    req.position_only = draw(st.booleans())
    req.timeout = Duration(sec=draw(st.integers(-5, 5)), nanosec=draw(st.integers(0, 10 ** 8)))
    req.active_joints = draw(st.lists(names, max_size=3))
    return req


@pytest.fixture(scope='module')
def running(tmp_path_factory):
    rclpy.init()
    client = rclpy.create_node('fuzz_client')
    node = NodeProcess('dynamics_node', '-r', f'__ns:=/{NS}', '-p', f'urdf_file:={DEMO_ARM}',
                       '-p', 'ik.seed_samples:=0', '-p', 'ik.max_timeout:=0.2',
                       log_path=str(tmp_path_factory.mktemp('fuzz') / 'node.log'))
    got = {}
    client.create_subscription(JointState, f'/{NS}/gravity_torques',
                               lambda m: got.__setitem__(m.header.stamp.nanosec, m), 100)
    pubs = (client.create_publisher(JointState, f'/{NS}/joint_states', 100),
            client.create_publisher(JointTrajectory, f'/{NS}/joint_trajectory', 100))
    ik = client.create_client(SolveIK, f'/{NS}/ros_dynamics/solve_ik')
    assert ik.wait_for_service(timeout_sec=20.0), node.output()
    yield client, node, got, pubs, ik
    assert node.proc.poll() is None, node.output()
    code = node.stop()
    client.destroy_node()
    rclpy.shutdown()
    assert code == 0, node.output()


STAMPS = iter(range(1, 10 ** 9))


def still_answered(client, got, pub):
    stamp = next(STAMPS)
    msg = JointState(name=NAMES, position=Q)
    msg.header.stamp.sec, msg.header.stamp.nanosec = 1, stamp
    assert spin_until(client, lambda: stamp in got, 10.0, lambda: pub.publish(msg))
    np.testing.assert_allclose(got[stamp].effort, MODEL.gravity_torques(np.array(Q)),
                               atol=1e-9)


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(kind=st.sampled_from(['state', 'trajectory', 'ik']), state=joint_states,
       trajectory=trajectories, request=ik_requests())
def test_random_messages_never_stop_the_node(running, kind, state, trajectory, request):
    client, node, got, (states, trajectories_pub), ik = running
    if kind == 'state':
        state.header.stamp.sec = 7
        states.publish(state)
    elif kind == 'trajectory':
        trajectories_pub.publish(trajectory)
    else:
        future = ik.call_async(request)
        assert spin_until(client, future.done, 10.0), node.output()[-2000:]
        assert future.result().error_code != SolveIK.Response.FAILURE, future.result().message
    still_answered(client, got, states)
    assert node.proc.poll() is None
