"""The node's outputs as functions, without a running node or rclpy.init: every message checked
against the engine's own API, or against finite differences of poses for a moving base frame.
"""
from builtin_interfaces.msg import Time
import numpy as np
import pytest
from robots import DEMO_ARM
from test_settings import values
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from ros_dynamics.engine import RobotModel
from ros_dynamics.engine.rotations import log_so3, matrix_from_quat_xyzw
from ros_dynamics.ros import outputs
from ros_dynamics.ros.settings import validate
from ros_dynamics.ros.trajectory_feedforward import from_message

MODEL = RobotModel.from_urdf_file(DEMO_ARM)
RNG = np.random.default_rng(11)
Q = RNG.uniform(-1.5, 1.5, MODEL.nq)
QD = RNG.uniform(-1.0, 1.0, MODEL.nq)
STAMP = Time(sec=12, nanosec=345)


def one_pass(**changes):
    settings = validate(values(**changes), MODEL)
    state = outputs.kinematics_pass(MODEL, settings, Q, QD)
    return settings, state, outputs.TipJacobians(state)


def pose_in(base, tip, q):
    return np.linalg.inv(MODEL.frame_pose(q, base)) @ MODEL.frame_pose(q, tip)


def test_gravity_torques_with_a_held_wrench_and_the_command_order():
    settings, state, J = one_pass(command_joints=['elbow_joint', 'shoulder_pan_joint'])
    F_tool = np.array([1.0, -2.0, 3.0, 0.1, 0.2, -0.3])
    R_world_tool = MODEL.frame_pose(Q, 'tool0')[:3, :3]
    F_world = np.concatenate([R_world_tool @ F_tool[:3], R_world_tool @ F_tool[3:]])
    wrenches = {'tool0': ('tool0', F_tool), 'not_a_tip': ('tool0', 10 * F_tool)}
    tau = outputs.holding_torques(MODEL, state, settings, wrenches, J)
    np.testing.assert_allclose(tau, MODEL.gravity_torques(Q) + MODEL.jacobian(Q, 'tool0').T
                               @ F_world, atol=1e-12)
    msg = outputs.gravity_joint_state(MODEL, tau, STAMP)
    assert list(msg.name) == list(MODEL.joint_names) and msg.header.stamp == STAMP
    np.testing.assert_array_equal(msg.effort, tau)
    command = outputs.gravity_command(settings, tau)
    assert command.data.tolist() == [tau[MODEL.joint_index('elbow_joint')], tau[0]]
    assert [d.label for d in command.layout.dim] == ['joints']
    templates = outputs.message_templates(MODEL, settings)
    assert outputs.gravity_command(settings, tau, templates.command) is templates.command
    assert templates.command.data.tolist() == command.data.tolist()


def test_tip_pose_twist_and_jacobian_with_the_base_fixed_to_the_root():
    settings, state, J = one_pass()
    [(tip, pose, twist, jac)] = outputs.tip_messages(MODEL, state, settings, QD, STAMP, J)
    assert tip == 'tool0' and pose.header.frame_id == twist.header.frame_id == 'base_link'
    T = MODEL.frame_pose(Q, 'tool0')
    p, o = pose.pose.position, pose.pose.orientation
    np.testing.assert_allclose([p.x, p.y, p.z], T[:3, 3], atol=1e-12)
    np.testing.assert_allclose(matrix_from_quat_xyzw([o.x, o.y, o.z, o.w]), T[:3, :3],
                               atol=1e-12)
    t = twist.twist
    np.testing.assert_allclose([t.linear.x, t.linear.y, t.linear.z, t.angular.x, t.angular.y,
                                t.angular.z], MODEL.frame_twist(Q, QD, 'tool0'), atol=1e-12)
    np.testing.assert_allclose(np.reshape(jac.data, (6, MODEL.nq)), MODEL.jacobian(Q, 'tool0'),
                               atol=1e-12)
    assert jac.layout.dim[0].label == 'rows:vx,vy,vz,wx,wy,wz@base_link'


def test_a_moving_base_frame_against_finite_differences():
    base = 'upper_arm_link'
    settings, state, J = one_pass(base_frame=base, tip_frames=['tool0'])
    assert not settings.base_fixed
    [(_, pose, twist, jac)] = outputs.tip_messages(MODEL, state, settings, QD, STAMP, J)
    T_base_tip = pose_in(base, 'tool0', Q)
    p = pose.pose.position
    np.testing.assert_allclose([p.x, p.y, p.z], T_base_tip[:3, 3], atol=1e-12)
    # Velocity of the tip relative to the base, in base axes: d/dt of the pose in the base.
    h = 1e-6
    T_plus, T_minus = pose_in(base, 'tool0', Q + h * QD), pose_in(base, 'tool0', Q - h * QD)
    v = (T_plus[:3, 3] - T_minus[:3, 3]) / (2 * h)
    w_base = T_base_tip[:3, :3] @ log_so3(T_minus[:3, :3].T @ T_plus[:3, :3]) / (2 * h)
    t = twist.twist
    np.testing.assert_allclose([t.linear.x, t.linear.y, t.linear.z], v, atol=1e-7)
    np.testing.assert_allclose([t.angular.x, t.angular.y, t.angular.z], w_base, atol=1e-7)
    # The Jacobian is the tip's, in base axes.
    R_world_base = MODEL.frame_pose(Q, base)[:3, :3]
    J_world_tip = MODEL.jacobian(Q, 'tool0')
    J_base_tip = np.vstack([R_world_base.T @ J_world_tip[:3], R_world_base.T @ J_world_tip[3:]])
    np.testing.assert_allclose(np.reshape(jac.data, (6, MODEL.nq)), J_base_tip, atol=1e-12)


def test_switched_off_outputs_give_no_message():
    settings, state, J = one_pass(publish__twists=False, publish__jacobians=False)
    [(_, pose, twist, jac)] = outputs.tip_messages(MODEL, state, settings, QD, STAMP, J)
    assert pose is not None and twist is None and jac is None


def test_markers_in_the_base_frame():
    settings, state, J = one_pass(base_frame='shoulder_link')
    tau = MODEL.gravity_torques(Q)
    msg = outputs.markers_message(MODEL, state, settings, tau, STAMP, J)
    assert all(m.header.frame_id == 'shoulder_link' for m in msg.markers)
    com = [m for m in msg.markers if m.ns.endswith('center_of_mass')][0].pose.position
    T_base_world = np.linalg.inv(MODEL.frame_pose(Q, 'shoulder_link'))
    expected = T_base_world[:3, :3] @ MODEL.center_of_mass(Q) + T_base_world[:3, 3]
    np.testing.assert_allclose([com.x, com.y, com.z], expected, atol=1e-12)
    assert sum(m.ns.endswith('gravity_torque') for m in msg.markers) == MODEL.nq


@pytest.mark.parametrize('friction', [False, True])
def test_feedforward_trajectory_and_command(friction):
    settings, _, _ = one_pass(friction=friction, command_joints=['wrist_1_joint', 'elbow_joint'])
    msg = JointTrajectory(joint_names=['elbow_joint', 'wrist_1_joint'])
    for t, p in ((0, [0.1, 0.2]), (1, [0.4, -0.2]), (2, [0.5, 0.0])):
        point = JointTrajectoryPoint(positions=p)
        point.time_from_start.sec = t
        msg.points.append(point)
    trajectory = from_message(msg, MODEL.joint_names)
    index = np.array([MODEL.joint_index(j) for j in trajectory.joint_names])
    out = outputs.feedforward_trajectory(MODEL, settings, msg, trajectory, (index, index), Q)
    assert list(out.joint_names) == ['elbow_joint', 'wrist_1_joint']
    for k, point in enumerate(out.points):
        q, qd = Q.copy(), np.zeros(MODEL.nq)
        q[index], qd[index] = trajectory.positions[k], trajectory.velocities[k]
        tau = MODEL.inverse_dynamics(q, qd, np.zeros(MODEL.nq), friction=friction)
        np.testing.assert_allclose(point.effort, tau[index], atol=1e-9)
    command = outputs.feedforward_command(MODEL, settings, Q, trajectory, (index, index), 0.5)
    q, qd, qdd = Q.copy(), np.zeros(MODEL.nq), np.zeros(MODEL.nq)
    q[index], qd[index], qdd[index] = trajectory.sample(0.5)
    tau = MODEL.inverse_dynamics(q, qd, qdd, friction=friction)
    np.testing.assert_allclose(command.data, tau[settings.command_index], atol=1e-12)
