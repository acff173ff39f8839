"""~/compute_fk, ~/solve_ik and ~/solve_ik_path answered across processes, every error path
included, while the streaming path keeps serving joint states.
"""
import math
import time

import numpy as np
import pytest
from robots import DEMO_ARM
from ros_helpers import NodeProcess, spin_until

rclpy = pytest.importorskip('rclpy', reason='ROS 2 (rclpy) is part of make env')
from geometry_msgs.msg import Pose  # noqa: E402
from rcl_interfaces.msg import Parameter, ParameterType, ParameterValue  # noqa: E402
from rcl_interfaces.srv import SetParameters  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402

from ros_dynamics.engine import RobotModel  # noqa: E402
from ros_dynamics.engine.rotations import matrix_from_quat_xyzw, quat_xyzw_from_matrix  # noqa
from ros_dynamics_interfaces.srv import ComputeFK, SolveIK, SolveIKPath  # noqa: E402

MODEL = RobotModel.from_urdf_file(DEMO_ARM)
NS = 'svc'
CODES = SolveIK.Response


@pytest.fixture(scope='module')
def setup(tmp_path_factory):
    rclpy.init()
    client_node = rclpy.create_node('service_client')
    log = tmp_path_factory.mktemp('svc') / 'node.log'
    node = NodeProcess('dynamics_node', '-r', f'__ns:=/{NS}', '-p', f'urdf_file:={DEMO_ARM}',
                       log_path=str(log))
    ik = client_node.create_client(SolveIK, f'/{NS}/ros_dynamics/solve_ik')
    fk = client_node.create_client(ComputeFK, f'/{NS}/ros_dynamics/compute_fk')
    assert ik.wait_for_service(timeout_sec=20.0), node.output()
    assert fk.wait_for_service(timeout_sec=20.0)
    yield client_node, ik, fk, node
    code = node.stop()
    client_node.destroy_node()
    rclpy.shutdown()
    assert code == 0, node.output()


def call(node, client, request, attempts=4, timeout=3.0):
    """Call and wait; resend when no answer comes (right after discovery a response can be
    lost while the response path is still being matched; these services are idempotent).
    """
    for _ in range(attempts):
        future = client.call_async(request)
        if spin_until(node, future.done, timeout):
            return future.result()
        client.remove_pending_request(future)
    raise AssertionError(f'no response after {attempts} attempts')


def pose_request(T, frame='', tip='', **fields):
    req = SolveIK.Request()
    req.target.header.frame_id = frame
    req.tip_frame = tip
    p = req.target.pose.position
    p.x, p.y, p.z = (float(v) for v in T[:3, 3])
    o = req.target.pose.orientation
    o.x, o.y, o.z, o.w = (float(v) for v in quat_xyzw_from_matrix(T[:3, :3]))
    for key, value in fields.items():
        setattr(req, key, value)
    return req


def test_compute_fk(setup):
    node, _, fk, _ = setup
    q = np.array([0.3, -0.8, 1.1, 0.2, -0.4, 0.9])
    req = ComputeFK.Request()
    req.state.name = list(MODEL.joint_names)
    req.state.position = q.tolist()
    req.frames = ['tool0', 'forearm_link']
    req.reference_frame = 'shoulder_link'
    res = call(node, fk, req)
    assert res.success and res.error_code == ComputeFK.Response.SUCCESS
    T_ref = MODEL.frame_pose(q, 'shoulder_link')
    for pose, frame in zip(res.poses, req.frames):
        expected = np.linalg.inv(T_ref) @ MODEL.frame_pose(q, frame)
        p, o = pose.pose.position, pose.pose.orientation
        assert pose.header.frame_id == 'shoulder_link'
        np.testing.assert_allclose([p.x, p.y, p.z], expected[:3, 3], atol=1e-12)
        np.testing.assert_allclose(matrix_from_quat_xyzw([o.x, o.y, o.z, o.w]), expected[:3, :3],
                                   atol=1e-12)
    req.frames = ['nope']
    res = call(node, fk, req)
    assert not res.success and res.error_code == ComputeFK.Response.INVALID_LINK_NAME
    assert 'tool0' in res.message
    req.frames = []
    req.state.position = [0.0]
    res = call(node, fk, req)
    assert res.error_code == ComputeFK.Response.INVALID_ROBOT_STATE


def test_solve_ik_success_in_a_moving_frame(setup):
    node, ik, _, _ = setup
    q_true = np.array([0.4, -1.0, 1.2, -0.3, 0.6, 0.2])
    T_world = MODEL.frame_pose(q_true, 'tool0')
    q_now = np.array([0.1, -0.5, 0.7, 0.0, 0.2, 0.0])
    T_frame = np.linalg.inv(MODEL.frame_pose(q_now, 'upper_arm_link')) @ T_world
    # Before any joint state, a target in a moving frame cannot be placed.
    res = call(node, ik, pose_request(T_frame, frame='upper_arm_link', tip='tool0'))
    assert res.error_code == CODES.FRAME_TRANSFORM_FAILURE and 'moves with the joints' in \
        res.message
    # The node places it with the current joint state.
    got = []
    node.create_subscription(JointState, f'/{NS}/gravity_torques', got.append, 10)
    pub = node.create_publisher(JointState, f'/{NS}/joint_states', 10)
    state = JointState(name=list(MODEL.joint_names), position=q_now.tolist())
    assert spin_until(node, lambda: got, 10.0, lambda: pub.publish(state))
    seed = q_true + 0.05
    req = pose_request(T_frame, frame='upper_arm_link', tip='tool0')
    req.seed.name = list(MODEL.joint_names)
    req.seed.position = seed.tolist()
    res = call(node, ik, req)
    assert res.success and res.error_code == CODES.SUCCESS, res.message
    q = np.array(res.solution.position)
    assert list(res.solution.name) == list(MODEL.joint_names)
    assert np.all(q >= MODEL.lower_limits) and np.all(q <= MODEL.upper_limits)
    T = MODEL.frame_pose(q, 'tool0')
    assert np.linalg.norm(T[:3, 3] - T_world[:3, 3]) <= 1e-5
    assert res.position_error <= 1e-5 and res.orientation_error <= 1e-5
    # The UR5's geometry is solved analytically (no iterations); the message says so.
    assert res.message.startswith('analytic three_parallel') and res.iterations == 0


@pytest.mark.parametrize('change, code, text', [
    (dict(tip='nope'), CODES.INVALID_LINK_NAME, 'valid frames'),
    (dict(frame='nowhere'), CODES.FRAME_TRANSFORM_FAILURE, "unknown frame 'nowhere'"),
    (dict(nan=True), CODES.INVALID_REQUEST, 'NaN'),
    (dict(zero_quat=True), CODES.INVALID_REQUEST, 'zero quaternion'),
    (dict(timeout=-1), CODES.INVALID_REQUEST, 'timeout'),
    (dict(seed_len=True), CODES.INVALID_ROBOT_STATE, '6 names but 5 positions'),
    (dict(seed_name=True), CODES.INVALID_ROBOT_STATE, "unknown joint 'ghost'"),
])
def test_solve_ik_error_codes(setup, change, code, text):
    node, ik, _, _ = setup
    req = pose_request(MODEL.frame_pose(MODEL.middle_configuration(), 'tool0'),
                       frame=change.get('frame', ''), tip=change.get('tip', ''))
    if change.get('nan'):
        req.target.pose.position.x = math.nan
    if change.get('zero_quat'):
        o = req.target.pose.orientation
        o.x = o.y = o.z = o.w = 0.0
    if 'timeout' in change:
        req.timeout.sec = change['timeout']
    if change.get('seed_len'):
        req.seed.name = list(MODEL.joint_names)
        req.seed.position = [0.0] * 5
    if change.get('seed_name'):
        req.seed.name = ['ghost']
        req.seed.position = [0.0]
    res = call(node, ik, req)
    assert not res.success and res.error_code == code, res.message
    assert text in res.message


def test_non_unit_quaternion_is_normalised_and_noted(setup):
    node, ik, _, _ = setup
    T = MODEL.frame_pose(np.array([0.2, -0.9, 1.0, 0.1, 0.3, 0.0]), 'tool0')
    req = pose_request(T)
    o = req.target.pose.orientation
    o.x, o.y, o.z, o.w = 2 * o.x, 2 * o.y, 2 * o.z, 2 * o.w
    res = call(node, ik, req)
    assert res.success, res.message
    assert 'normalised' in res.message


def test_unreachable_target_and_streaming_during_a_slow_solve(setup):
    node, ik, _, _ = setup
    T = np.eye(4)
    T[:3, 3] = [5.0, 0.0, 0.0]
    req = pose_request(T)
    req.position_only = True          # numerical: an analytic solve would fail at once
    req.timeout.sec, req.timeout.nanosec = 1, 0
    got = []
    node.create_subscription(JointState, f'/{NS}/gravity_torques', got.append, 100)
    pub = node.create_publisher(JointState, f'/{NS}/joint_states', 10)

    def publish():
        msg = JointState()
        msg.name = list(MODEL.joint_names)
        msg.position = [0.1, -0.5, 0.7, 0.0, 0.2, 0.0]
        pub.publish(msg)

    assert spin_until(node, lambda: got, 10.0, publish)
    got.clear()
    start = time.monotonic()
    future = ik.call_async(req)
    assert spin_until(node, future.done, 10.0, publish)
    elapsed = time.monotonic() - start
    res = future.result()
    assert res.error_code == CODES.NO_IK_SOLUTION and not res.success     # as MoveIt answers
    assert res.position_error > 3.0 and 'best position error' in res.message
    assert 0.95 <= elapsed < 3.0
    # The streaming path was answered all along (published at the spin rate, ~50 Hz or more).
    assert len(got) >= 20 * elapsed, (len(got), elapsed)


def test_seed_tables_are_built_for_the_default_tip_and_for_requested_tips(setup):
    """The default tip's table is built after startup, another tip's after its first request,
    both between requests (logged with their size); solves of that tip succeed before and after.
    """
    node, ik, _, process = setup
    deadline = time.monotonic() + 10.0
    while 'IK seed table of tool0: 20000 configurations' not in process.output():
        assert time.monotonic() < deadline, process.output()
        time.sleep(0.05)
    q = np.array([0.3, -0.7, 0.9, 0.2, -0.3, 0.1])
    T = MODEL.frame_pose(q, 'wrist_2_link')
    for _ in range(2):
        res = call(node, ik, pose_request(T, tip='wrist_2_link', position_only=True))
        assert res.success, res.message
        p = MODEL.frame_pose(np.array(res.solution.position), 'wrist_2_link')[:3, 3]
        np.testing.assert_allclose(p, T[:3, 3], atol=1e-5)
        deadline = time.monotonic() + 10.0
        while 'IK seed table of wrist_2_link' not in process.output():
            assert time.monotonic() < deadline, process.output()
            time.sleep(0.05)
    assert process.output().count('IK seed table of') == 2


def test_ik_parameters_set_on_the_dynamics_node_reach_the_services(setup):
    """ik.* are parameters of the dynamics node (as doc/node_reference.md says); validated
    there, they become the services' defaults.
    """
    node, ik, _, _ = setup
    params = node.create_client(SetParameters, f'/{NS}/ros_dynamics/set_parameters')
    assert params.wait_for_service(timeout_sec=10.0)

    def set_tip(tip):
        value = ParameterValue(type=ParameterType.PARAMETER_STRING, string_value=tip)
        future = params.call_async(SetParameters.Request(
            parameters=[Parameter(name='ik.tip_frame', value=value)]))
        assert spin_until(node, future.done, 10.0)
        return future.result().results[0]

    refused = set_tip('nope')
    assert not refused.successful
    assert 'parameter ik.tip_frame: unknown frames' in refused.reason
    q = np.array([0.3, -0.7, 0.9, 0.2, -0.3, 0.1])
    T = MODEL.frame_pose(q, 'wrist_2_link')
    try:
        assert set_tip('wrist_2_link').successful
        res = call(node, ik, pose_request(T, position_only=True))      # no tip: the default
        assert res.success, res.message
        p = MODEL.frame_pose(np.array(res.solution.position), 'wrist_2_link')[:3, 3]
        np.testing.assert_allclose(p, T[:3, 3], atol=1e-5)
    finally:
        assert set_tip('').successful


@pytest.fixture(scope='module')
def path_client(setup):
    node = setup[0]
    client = node.create_client(SolveIKPath, f'/{NS}/ros_dynamics/solve_ik_path')
    assert client.wait_for_service(timeout_sec=20.0)
    return client


def path_request(T, frame='', tip='', **fields):
    """A SolveIKPath request for the poses ``T`` (N, 4, 4) in ``frame``."""
    req = SolveIKPath.Request()
    req.header.frame_id, req.tip_frame = frame, tip
    for T_n in T:
        w = Pose()
        w.position.x, w.position.y, w.position.z = (float(v) for v in T_n[:3, 3])
        o = w.orientation
        o.x, o.y, o.z, o.w = (float(v) for v in quat_xyzw_from_matrix(T_n[:3, :3]))
        req.waypoints.append(w)
    for key, value in fields.items():
        setattr(req, key, value)
    return req


def straight_line(q0, n, length, direction=(0.0, 0.0, -1.0)):
    T = np.repeat(MODEL.frame_pose(q0, 'tool0')[None], n, axis=0)
    T[:, :3, 3] += np.linspace(0.0, length, n)[:, None] * np.asarray(direction)
    return T


def test_solve_ik_path_answers_a_trajectory_on_one_branch(setup, path_client):
    node = setup[0]
    q0 = np.array([0.3, -1.2, 1.5, -1.9, -1.5, 0.4])
    T = straight_line(q0, 100, 0.2)
    req = path_request(T)
    req.start_state.name = list(MODEL.joint_names)
    req.start_state.position = (q0 + 0.02).tolist()
    res = call(node, path_client, req)
    assert res.success and res.error_code == CODES.SUCCESS and res.fraction == 1.0, res.message
    assert res.message.startswith('analytic three_parallel')
    assert list(res.solution.joint_names) == list(MODEL.joint_names)
    assert len(res.solution.points) == 100
    Q = np.array([p.positions for p in res.solution.points])
    np.testing.assert_allclose(Q[0], q0, atol=1e-9)
    for q, T_n in zip(Q, T):
        assert np.abs(MODEL.frame_pose(q, 'tool0') - T_n).max() < 1e-5
    steps = np.abs(np.diff(Q, axis=0)).max()
    assert res.largest_joint_step == pytest.approx(steps) and steps < 0.05


def test_solve_ik_path_stops_where_the_arm_cannot_follow(setup, path_client):
    node = setup[0]
    q0 = np.array([0.0, -1.0, 1.0, -1.5, -1.5, 0.0])
    p = MODEL.frame_pose(q0, 'tool0')[:3, 3]
    res = call(node, path_client, path_request(straight_line(q0, 100, 3.0, p / np.linalg.norm(p)),
                                               start_state=JointState(
                                                   name=list(MODEL.joint_names),
                                                   position=q0.tolist())))
    assert not res.success and res.error_code == CODES.NO_IK_SOLUTION
    solved = len(res.solution.points)
    assert 0 < solved < 100 and res.fraction == pytest.approx(solved / 100)
    assert f'pose {solved}:' in res.message


def waypoint_value(index, value, field='x', part='position'):
    T = straight_line(np.zeros(6), 10, 0.05)
    req = path_request(T)
    setattr(getattr(req.waypoints[index], part), field, value)
    return req


def zero_quaternion(index):
    req = waypoint_value(index, 0.0, 'w', 'orientation')
    o = req.waypoints[index].orientation
    o.x = o.y = o.z = 0.0
    return req


@pytest.mark.parametrize('make, code, match', [
    (lambda: path_request(np.zeros((0, 4, 4))), CODES.INVALID_REQUEST, 'waypoints: expected 1'),
    (lambda: path_request(np.broadcast_to(np.eye(4), (100_001, 4, 4))), CODES.INVALID_REQUEST,
     'waypoints: expected 1 to 100000'),
    (lambda: waypoint_value(7, math.nan), CODES.INVALID_REQUEST, 'waypoint 7: NaN'),
    (lambda: waypoint_value(3, 1e300, 'w', 'orientation'), CODES.INVALID_REQUEST, 'waypoint 3'),
    (lambda: zero_quaternion(2), CODES.INVALID_REQUEST, 'waypoint 2: zero quaternion'),
    (lambda: path_request(straight_line(np.zeros(6), 3, 0.01), max_joint_step=math.nan),
     CODES.INVALID_REQUEST, 'max_joint_step'),
    (lambda: path_request(straight_line(np.zeros(6), 3, 0.01), max_joint_step=7.0),
     CODES.INVALID_REQUEST, 'max_joint_step'),
    (lambda: path_request(straight_line(np.zeros(6), 3, 0.01), tip='nope'),
     CODES.INVALID_LINK_NAME, 'nope'),
    (lambda: path_request(straight_line(np.zeros(6), 3, 0.01), frame='nope'),
     CODES.FRAME_TRANSFORM_FAILURE, 'nope'),
    (lambda: path_request(straight_line(np.zeros(6), 3, 0.01), active_joints=['nope']),
     CODES.INVALID_GROUP_NAME, 'active_joints'),
    (lambda: path_request(straight_line(np.zeros(6), 3, 0.01), position_tolerance=-1.0),
     CODES.INVALID_REQUEST, 'position_tolerance'),
])
def test_solve_ik_path_refuses_bad_requests_with_their_codes(setup, path_client, make, code,
                                                            match):
    res = call(setup[0], path_client, make(), timeout=10.0)
    assert not res.success and res.error_code == code, res.message
    assert match in res.message
    assert len(res.solution.points) == 0
