"""What a ROS user expects of the node, across processes: partial joint states, frame_prefix,
markers that live and die with what they show, MoveIt's semantics, remaps and use_sim_time for
the services, QoS overrides, diagnostics per node with a quiet period, per-cause throttling.
"""
import numpy as np
import pytest
from robots import DEMO_ARM
from ros_helpers import NodeProcess, client_node, spin_until

rclpy = pytest.importorskip('rclpy', reason='ROS 2 (rclpy) is part of make env')
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus  # noqa: E402
from geometry_msgs.msg import PoseStamped, WrenchStamped  # noqa: E402
from rcl_interfaces.msg import Parameter, ParameterType, ParameterValue  # noqa: E402
from rcl_interfaces.srv import SetParameters  # noqa: E402
from rclpy.qos import ReliabilityPolicy  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint  # noqa: E402
from visualization_msgs.msg import Marker, MarkerArray  # noqa: E402

from ros_dynamics.engine import RobotModel  # noqa: E402
from ros_dynamics.engine.rotations import quat_xyzw_from_matrix  # noqa: E402
from ros_dynamics_interfaces.srv import ComputeFK, SolveIK  # noqa: E402

MODEL = RobotModel.from_urdf_file(DEMO_ARM)
Q = np.array([0.3, -0.9, 1.2, -0.4, 0.7, 0.1])


@pytest.fixture(scope='module')
def client():
    with client_node('conventions_client') as node:
        yield node


def start(tmp_path, ns, *args):
    return NodeProcess('dynamics_node', '-r', f'__ns:=/{ns}', '-p', f'urdf_file:={DEMO_ARM}',
                       *args, log_path=str(tmp_path / f'{ns}.log'))


def call(client, service, request, attempts=4):
    for _ in range(attempts):
        future = service.call_async(request)
        if spin_until(client, future.done, 5.0):
            return future.result()
        service.remove_pending_request(future)
    raise AssertionError('no answer')


def set_param(client, ns, name, value):
    params = client.create_client(SetParameters, f'/{ns}/ros_dynamics/set_parameters')
    assert params.wait_for_service(timeout_sec=10.0)
    kinds = {bool: ('bool_value', ParameterType.PARAMETER_BOOL),
             str: ('string_value', ParameterType.PARAMETER_STRING),
             float: ('double_value', ParameterType.PARAMETER_DOUBLE),
             list: ('string_array_value', ParameterType.PARAMETER_STRING_ARRAY)}
    field, kind = kinds[type(value)]
    v = ParameterValue(type=kind, **{field: value})
    [result] = call(client, params, SetParameters.Request(
        parameters=[Parameter(name=name, value=v)])).results
    client.destroy_client(params)
    return result


def statuses(received, ns):
    return [s for d in received for s in d.status if s.name == f'/{ns}/ros_dynamics: dynamics']


def test_partial_joint_states_defaults_and_diagnostics(client, tmp_path):
    ns = 'partial'
    node = start(tmp_path, ns, '-p', 'tip_frames:=[tool0, upper_arm_link]',
                 '-p', 'initial_positions.joints:=[wrist_3_joint]',
                 '-p', 'initial_positions.values:=[0.5]')
    try:
        torques, tool, upper, diags = [], [], [], []
        client.create_subscription(JointState, f'/{ns}/gravity_torques', torques.append, 10)
        client.create_subscription(PoseStamped, f'/{ns}/poses/tool0', tool.append, 10)
        client.create_subscription(PoseStamped, f'/{ns}/poses/upper_arm_link', upper.append, 10)
        client.create_subscription(DiagnosticArray, '/diagnostics', diags.append, 10)
        pub = client.create_publisher(JointState, f'/{ns}/joint_states', 10)
        arm = JointState(name=list(MODEL.joint_names[:5]), position=Q[:5].tolist())
        assert spin_until(client, lambda: torques and upper, 20.0, lambda: pub.publish(arm)), \
            node.output()
        expected_q = np.append(Q[:5], 0.5)                  # wrist_3 at its initial position
        np.testing.assert_allclose(torques[-1].effort, MODEL.gravity_torques(expected_q),
                                   atol=1e-9)
        assert not tool                                      # wrist_3 moves tool0: no pose
        assert spin_until(client, lambda: statuses(diags, ns), 5.0, lambda: pub.publish(arm))
        status = statuses(diags, ns)[-1]
        assert status.level == DiagnosticStatus.WARN and 'never heard of' in status.message
        assert {kv.key: kv.value for kv in status.values}['joints_at_default'] == 'wrist_3_joint'
        full = JointState(name=list(MODEL.joint_names), position=Q.tolist())
        assert spin_until(client, lambda: tool, 10.0, lambda: pub.publish(full))
        diags.clear()
        assert spin_until(client, lambda: statuses(diags, ns) and statuses(diags, ns)[-1].level
                          == DiagnosticStatus.OK, 5.0, lambda: pub.publish(full))
    finally:
        assert node.stop() == 0, node.output()
    assert node.output().count('joints never heard of are taken at their defaults') == 1
    assert 'wrist_3_joint=0.5' in node.output()


def test_require_all_joints_keeps_the_old_behaviour(client, tmp_path):
    ns = 'strict'
    node = start(tmp_path, ns, '-p', 'require_all_joints:=true')
    try:
        torques = []
        client.create_subscription(JointState, f'/{ns}/gravity_torques', torques.append, 10)
        pub = client.create_publisher(JointState, f'/{ns}/joint_states', 10)
        arm = JointState(name=list(MODEL.joint_names[:5]), position=Q[:5].tolist())
        # Partial states until the node says what it waits for (however long it takes to
        # start on a loaded machine), and no torques meanwhile.
        assert spin_until(client, lambda: 'waiting for joint states of' in node.output(), 20.0,
                          lambda: pub.publish(arm))
        assert not spin_until(client, lambda: torques, 1.0, lambda: pub.publish(arm))
        full = JointState(name=list(MODEL.joint_names), position=Q.tolist())
        assert spin_until(client, lambda: torques, 10.0, lambda: pub.publish(full))
    finally:
        assert node.stop() == 0, node.output()


def test_frame_prefix_out_and_in(client, tmp_path):
    ns = 'prefixed'
    node = start(tmp_path, ns, '-p', 'frame_prefix:=left/', '-p', 'markers_rate:=100.0')
    try:
        poses, markers, torques = [], [], []
        client.create_subscription(PoseStamped, f'/{ns}/poses/tool0', poses.append, 10)
        client.create_subscription(MarkerArray, f'/{ns}/markers', markers.append, 10)
        client.create_subscription(JointState, f'/{ns}/gravity_torques', torques.append, 10)
        pub = client.create_publisher(JointState, f'/{ns}/joint_states', 10)
        full = JointState(name=list(MODEL.joint_names), position=Q.tolist())
        assert spin_until(client, lambda: poses and markers, 20.0, lambda: pub.publish(full))
        assert poses[-1].header.frame_id == 'left/base_link'
        assert {m.header.frame_id for m in markers[-1].markers} == {'left/base_link'}
        # Received frame ids: a prefixed wrench frame, FK reference and IK target frame.
        wrench = WrenchStamped()
        wrench.header.frame_id = 'left/tool0'
        wrench.wrench.force.z = -10.0
        wpub = client.create_publisher(WrenchStamped, f'/{ns}/wrenches/tool0', 10)
        J = MODEL.jacobian(Q, 'tool0', 'local_world_aligned')
        R = MODEL.frame_pose(Q, 'tool0')[:3, :3]
        expected = MODEL.gravity_torques(Q) + J.T @ np.concatenate([R @ [0, 0, -10.0],
                                                                    np.zeros(3)])
        assert spin_until(client, lambda: torques and np.allclose(torques[-1].effort, expected,
                                                                  atol=1e-9), 10.0,
                          lambda: (wpub.publish(wrench), pub.publish(full)))
        fk = client.create_client(ComputeFK, f'/{ns}/ros_dynamics/compute_fk')
        assert fk.wait_for_service(timeout_sec=10.0)
        req = ComputeFK.Request(frames=['left/tool0', 'forearm_link'],
                                reference_frame='left/shoulder_link')
        res = call(client, fk, req)
        assert res.success, res.message
        assert list(res.fk_link_names) == ['left/tool0', 'left/forearm_link']
        assert {p.header.frame_id for p in res.poses} == {'left/shoulder_link'}
        ik = client.create_client(SolveIK, f'/{ns}/ros_dynamics/solve_ik')
        T = np.linalg.inv(MODEL.frame_pose(Q, 'upper_arm_link')) @ MODEL.frame_pose(
            Q + 0.05, 'tool0')
        req = SolveIK.Request(tip_frame='left/tool0')
        req.target.header.frame_id = 'left/upper_arm_link'
        p, o = req.target.pose.position, req.target.pose.orientation
        p.x, p.y, p.z = T[:3, 3].tolist()
        o.x, o.y, o.z, o.w = quat_xyzw_from_matrix(T[:3, :3]).tolist()
        res = call(client, ik, req)
        assert res.success, res.message
    finally:
        assert node.stop() == 0, node.output()


def test_markers_cleared_when_tips_or_switch_change_and_no_zero_arrows(client, tmp_path):
    ns = 'markers'
    node = start(tmp_path, ns, '-p', 'markers_rate:=100.0')
    try:
        arrays = []
        client.create_subscription(MarkerArray, f'/{ns}/markers', arrays.append, 100)
        pub = client.create_publisher(JointState, f'/{ns}/joint_states', 10)
        zero = JointState(name=list(MODEL.joint_names), position=[0.0] * MODEL.nq)
        assert spin_until(client, lambda: arrays, 20.0, lambda: pub.publish(zero))
        for m in arrays[-1].markers:                       # no arrow of zero length drawn
            if m.type == Marker.ARROW and m.action == Marker.ADD:
                a, b = m.points
                assert np.linalg.norm([b.x - a.x, b.y - a.y, b.z - a.z]) > 0
        assert any(m.action == Marker.DELETE for m in arrays[-1].markers)   # shoulder_pan: 0
        for name, value, check in (
                ('tip_frames', ['forearm_link'], 'ros_dynamics/manipulability/forearm_link'),
                ('publish.markers', False, None)):
            arrays.clear()
            assert set_param(client, ns, name, value).successful
            assert spin_until(client, lambda: any(m.action == Marker.DELETEALL
                                                  for a in arrays for m in a.markers), 10.0,
                              lambda: pub.publish(zero)), name
            if check:
                assert spin_until(client, lambda c=check: any(
                    m.ns == c for a in arrays for m in a.markers), 10.0,
                    lambda: pub.publish(zero))
        arrays.clear()
        spin_until(client, lambda: False, 1.0, lambda: pub.publish(zero))
        assert not arrays                                   # switched off: nothing drawn
    finally:
        assert node.stop() == 0, node.output()


def test_moveit_semantics_remaps_sim_time_and_qos_overrides(client, tmp_path):
    ns = 'moveit'
    node = start(tmp_path, ns, '-r', '~/solve_ik:=/planner/ik', '-p', 'use_sim_time:=true',
                 '-p', 'ik.active_joints:=[shoulder_pan_joint, shoulder_lift_joint, '
                       'elbow_joint]',
                 '-p', f'qos_overrides./{ns}/joint_states.subscription.reliability:=reliable',
                 '-p', f'qos_overrides./{ns}/gravity_torques.publisher.reliability:=best_effort')
    try:
        ik = client.create_client(SolveIK, '/planner/ik')       # remapped
        assert ik.wait_for_service(timeout_sec=20.0), node.output()
        q_true = np.array([0.4, -1.0, 1.2, 0.0, 0.0, 0.0])
        seed = np.array([0.3, -0.9, 1.1, 0.2, -0.3, 0.4])
        req = SolveIK.Request(position_only=True)
        p = req.target.pose.position
        p.x, p.y, p.z = MODEL.frame_pose(np.append(q_true[:3], seed[3:]), 'tool0')[:3, 3]
        req.target.pose.orientation.w = 1.0
        req.seed.name, req.seed.position = list(MODEL.joint_names), seed.tolist()
        res = call(client, ik, req)                              # ik.active_joints: 3 joints
        assert res.success, res.message
        np.testing.assert_array_equal(np.array(res.solution.position)[3:], seed[3:])
        req.active_joints = ['ghost']
        assert call(client, ik, req).error_code == SolveIK.Response.INVALID_GROUP_NAME
        req.active_joints = ['wrist_3_joint']                    # cannot reach: no solution
        req.timeout.nanosec = 50_000_000
        res = call(client, ik, req)
        assert res.error_code == SolveIK.Response.NO_IK_SOLUTION and not res.success
        fk = client.create_client(ComputeFK, f'/{ns}/ros_dynamics/compute_fk')
        res = call(client, fk, ComputeFK.Request())
        assert list(res.fk_link_names) == list(MODEL.frame_names)
        assert res.poses[0].header.stamp.sec == 0                # sim time, no /clock yet
        infos = client.get_subscriptions_info_by_topic(f'/{ns}/joint_states')
        assert [i.qos_profile.reliability for i in infos] == [ReliabilityPolicy.RELIABLE]
        infos = client.get_publishers_info_by_topic(f'/{ns}/gravity_torques')
        assert [i.qos_profile.reliability for i in infos] == [ReliabilityPolicy.BEST_EFFORT]
    finally:
        assert node.stop() == 0, node.output()


def test_diagnostics_back_to_ok_after_the_quiet_period_and_throttled_per_cause(client,
                                                                             tmp_path):
    ns = 'quiet'
    node = start(tmp_path, ns, '-p', 'diagnostics.quiet_period:=2.0')
    try:
        diags = []
        client.create_subscription(DiagnosticArray, '/diagnostics', diags.append, 10)
        pub = client.create_publisher(JointTrajectory, f'/{ns}/joint_trajectory', 10)
        js = client.create_publisher(JointState, f'/{ns}/joint_states', 10)
        full = JointState(name=list(MODEL.joint_names), position=Q.tolist())
        assert spin_until(client, lambda: statuses(diags, ns), 20.0, lambda: js.publish(full))
        unknown = JointTrajectory(joint_names=['ghost'], points=[JointTrajectoryPoint()])
        empty = JointTrajectory(joint_names=list(MODEL.joint_names))
        pub.publish(unknown)
        pub.publish(empty)                         # a different cause within 5 s: logged too
        diags.clear()
        assert spin_until(client, lambda: any(s.level == DiagnosticStatus.WARN
                                              for s in statuses(diags, ns)), 5.0)
        diags.clear()
        assert spin_until(client, lambda: statuses(diags, ns) and statuses(diags, ns)[-1].level
                          == DiagnosticStatus.OK, 6.0, lambda: js.publish(full))
    finally:
        assert node.stop() == 0, node.output()
    out = node.output()
    assert "rejected a trajectory: unknown joints ['ghost']" in out
    assert 'rejected a trajectory: no points' in out
