"""The node's floating-base parts without rclpy running: odometry validation, state assembly,
settings of the base, support polygons, contact torques, center of mass and momentum messages.
"""
import math

import numpy as np
import pytest
from robots import DEMO_ARM, SOLO12, erd, load, load_floating
from ros_helpers import odometry_message

pytest.importorskip('rclpy', reason='ROS 2 message types are part of make env')
from ros_dynamics.engine.exceptions import StanceError  # noqa: E402
from ros_dynamics.ros import base_outputs, markers, outputs, settings  # noqa: E402
from ros_dynamics.ros.base_state import (  # noqa: E402
    InvalidOdometry,
    base_from_odometry,
    full_state,
    static_base,
)
from ros_dynamics.ros.parameters import PARAMETERS, SettingsError  # noqa: E402

SOLO = load_floating(erd(SOLO12))
FEET = ['FL_FOOT', 'FR_FOOT', 'HL_FOOT', 'HR_FOOT']


def values(**changes):
    out = {p.name: p.default for p in PARAMETERS}
    out.update({'root_joint': 'floating', 'contact_frames': FEET})
    out.update({k.replace('__', '.'): v for k, v in changes.items()})
    return out


def odometry(p=(0.1, 0.2, 0.3), quat=(0.0, 0.0, 0.0, 1.0), twist=(0.0,) * 6, frame='odom',
             child='base_link'):
    return odometry_message(p, quat, twist, frame, child)


def standing(node_settings, base_q=(0, 0, 0.25, 0, 0, 0, 1), v=None):
    q_a = np.array([0.0, 0.8, -1.6] * 4)
    q = np.concatenate([base_q, q_a])
    v = np.zeros(SOLO.nv) if v is None else v
    return q, v, outputs.kinematics_pass(SOLO, node_settings, q, v)


def test_odometry_is_the_free_flyers_configuration_and_velocity():
    current = settings.validate(values(), SOLO).base
    quat = np.array([0.1, -0.2, 0.3, 0.9])
    twist = (0.1, 0.2, 0.3, -0.4, 0.5, -0.6)
    base = base_from_odometry(odometry(quat=quat / np.linalg.norm(quat) * (1 + 5e-4),
                                       twist=twist), current, 'base_link', '', 7.0)
    np.testing.assert_allclose(base.q, np.r_[0.1, 0.2, 0.3, quat / np.linalg.norm(quat)])
    np.testing.assert_allclose(base.v, twist)
    assert base.received == 7.0 and base.stale(0.5, 7.6) and not base.stale(0.0, 1e9)
    q, v = full_state(SOLO, settings.validate(values(), SOLO).initial_q, np.arange(12.0),
                      np.ones(12), base)
    np.testing.assert_allclose(q[:7], base.q)
    np.testing.assert_allclose(q[SOLO.actuated_q_index], np.arange(12.0))
    np.testing.assert_allclose(v, np.r_[twist, np.ones(12)])
    # the engine reads the base pose from odometry: the root link lands there
    T = SOLO.frame_pose(q, 'base_link')
    np.testing.assert_allclose(T[:3, 3], [0.1, 0.2, 0.3], atol=1e-12)


def test_prefixed_frame_ids_and_planar_bases():
    prefixed = settings.validate(values(frame_prefix='solo/'), SOLO).base
    base = base_from_odometry(odometry(frame='solo/odom', child='solo/base_link'), prefixed,
                              'base_link', 'solo/', 0.0)
    assert base.q.size == 7
    planar = load_floating(erd(SOLO12), 'planar')
    current = settings.validate(values(root_joint='planar'), planar).base
    yaw = 0.7
    base = base_from_odometry(odometry(quat=(0, 0, math.sin(yaw / 2), math.cos(yaw / 2)),
                                       twist=(1, 2, 3, 4, 5, 6)), current, 'base_link', '', 0.0)
    np.testing.assert_allclose(base.q, [0.1, 0.2, math.cos(yaw), math.sin(yaw)])
    np.testing.assert_allclose(base.v, [1, 2, 6])
    with pytest.raises(InvalidOdometry, match='turns about z only'):
        base_from_odometry(odometry(quat=(0.6, 0, 0, 0.8)), current, 'base_link', '', 0.0)


@pytest.mark.parametrize('bad, match', [
    (odometry(p=(math.nan, 0, 0)), 'pose: NaN, Inf'),
    (odometry(p=(1e300, 0, 0)), 'pose: NaN, Inf or beyond'),
    (odometry(quat=(0, 0, 0, 0)), 'unit quaternion.*norm of 0'),
    (odometry(quat=(0, 0, 0, 1.01)), 'norm of 1.01'),
    (odometry(quat=(math.inf, 0, 0, 1)), 'pose: NaN, Inf'),
    (odometry(twist=(0, 0, 0, math.nan, 0, 0)), 'twist: NaN, Inf'),
    (odometry(twist=(1e5, 0, 0, 0, 0, 0)), 'twist: NaN, Inf or beyond'),
    (odometry(frame='map'), "header.frame_id 'map': expected 'odom'"),
    (odometry(frame=''), "header.frame_id '': expected"),
    (odometry(child='FL_FOOT'), "child_frame_id 'FL_FOOT': expected the URDF root link"),
    (odometry(child='x' * 100_000), 'child_frame_id'),
])
def test_hostile_odometry_is_rejected_with_the_reason(bad, match):
    current = settings.validate(values(), SOLO).base
    with pytest.raises(InvalidOdometry, match=match):
        base_from_odometry(bad, current, 'base_link', '', 0.0)


@pytest.mark.parametrize('changes, parameter, match', [
    ({'root_joint': 'spherical'}, 'root_joint', "expected '', 'floating' or 'planar'"),
    ({'contacts__type': 'line'}, 'contacts.type', "expected 'point' or 'wrench'"),
    ({'contact_frames': ['FL_FOOT', 'nope']}, 'contact_frames', r"unknown frames \['nope'\]"),
    ({'contact_frames': ['FL_FOOT', 'FL_FOOT']}, 'contact_frames', 'named twice'),
    ({'base_pose': [0, 0, 0, 0, 0, 0, 0]}, 'base_pose', 'norm of 0'),
    ({'base_pose': [math.nan, 0, 0, 0, 0, 0, 1]}, 'base_pose', '7 finite values'),
    ({'base_pose': [0.0] * 6}, 'base_pose', '7 finite values'),
    ({'world_frame': ''}, 'world_frame', 'without blanks'),
    ({'root_joint': 'planar'}, 'root_joint', "built with 'floating'"),
])
def test_base_settings_refused_with_the_parameter_named(changes, parameter, match):
    with pytest.raises(SettingsError, match=match) as err:
        settings.validate(values(**changes), SOLO)
    assert err.value.parameter == parameter


def test_a_fixed_base_refuses_contacts_and_keeps_its_outputs():
    arm = load(DEMO_ARM)
    fixed = values(root_joint='', contact_frames=[''])
    current = settings.validate(fixed, arm)
    assert current.base.root_joint == '' and current.base.q_static is None
    with pytest.raises(SettingsError, match='contacts need a floating or planar base'):
        settings.validate(values(root_joint='', contact_frames=['tool0']), arm)
    q = np.array([0.3, -0.9, 1.2, -0.4, 0.7, 0.1])
    state = outputs.kinematics_pass(arm, current, q, np.zeros(6))
    tau = base_outputs.actuated_gravity(arm, state, current, {}, outputs.TipJacobians(state))
    np.testing.assert_allclose(tau, arm.gravity_torques(q), atol=1e-12)
    assert base_outputs.support_markers(arm, state, current, None, markers.make_marker) == []
    com = base_outputs.center_of_mass_message(arm, state, current, None)
    assert com.header.frame_id == arm.root_link


def test_contact_torques_com_and_momentum_are_the_engines():
    current = settings.validate(values(), SOLO)
    rng = np.random.default_rng(3)
    v = rng.normal(size=SOLO.nv)
    q, v, state = standing(current, v=v)
    tau = base_outputs.actuated_gravity(SOLO, state, current, {}, outputs.TipJacobians(state))
    np.testing.assert_allclose(tau, SOLO.contact_gravity_torques(q, FEET).torques, atol=1e-12)
    com = base_outputs.center_of_mass_message(SOLO, state, current, None)
    np.testing.assert_allclose([com.point.x, com.point.y, com.point.z],
                               SOLO.center_of_mass(q), atol=1e-12)
    h = base_outputs.momentum_message(SOLO, state, current, None).wrench
    np.testing.assert_allclose([h.force.x, h.force.y, h.force.z, h.torque.x, h.torque.y,
                                h.torque.z], SOLO.centroidal_momentum(q, v), atol=1e-12)
    wrench = settings.validate(values(contacts__type='wrench', contacts__friction=0.7), SOLO)
    tau = base_outputs.actuated_gravity(SOLO, state, wrench, {}, outputs.TipJacobians(state))
    np.testing.assert_allclose(
        tau, SOLO.contact_gravity_torques(q, FEET, 'wrench', 0.7).torques, atol=1e-9)


def test_stances_that_cannot_hold_raise():
    for frames in ([''], ['FL_FOOT']):
        current = settings.validate(values(contact_frames=frames), SOLO)
        _, _, state = standing(current)
        with pytest.raises(StanceError, match='no contact_frames|cannot hold'):
            base_outputs.actuated_gravity(SOLO, state, current, {}, outputs.TipJacobians(state))


def test_convex_hull():
    square = [[0, 0], [1, 0], [1, 1], [0, 1], [0.5, 0.5], [0.5, 0]]   # inside and on an edge
    hull = base_outputs.convex_hull_2d(square)
    assert sorted(hull) == [0, 1, 2, 3] and len(hull) == 4
    ring = np.array(square, dtype=float)[hull]
    x, y = ring.T
    area = 0.5 * np.sum(x * np.roll(y, -1) - np.roll(x, -1) * y)
    assert area == pytest.approx(1.0)                    # counter-clockwise
    assert base_outputs.convex_hull_2d([[0, 0], [1, 1], [2, 2]]) in ([0, 2], [2, 0])
    assert base_outputs.convex_hull_2d([[1, 1], [1, 1]]) == [0]
    assert base_outputs.convex_hull_2d([[3, 4]]) == [0]
    assert base_outputs.convex_hull_2d(np.zeros((0, 2))) == []


@pytest.mark.parametrize('gravity', [[0, 0, -9.81], [0, -9.81, 0], [1.0, 2.0, -9.0]])
def test_support_polygon_is_normal_to_gravity_and_knows_inside(gravity):
    up = base_outputs.up_direction(gravity)
    E = base_outputs.ground_basis(up)
    np.testing.assert_allclose(E @ E.T, np.eye(2), atol=1e-12)
    np.testing.assert_allclose(np.cross(E[0], E[1]), up, atol=1e-12)
    feet_2d = np.array([[1, 1], [-1, 1], [-1, -1], [1, -1]], dtype=float)
    heights = np.array([0.0, 0.1, 0.05, 0.2])
    feet = feet_2d @ E + np.outer(heights, up) + [0.3, -0.2, 0.1]
    corners, com_ground, inside = base_outputs.support_polygon(feet, feet.mean(axis=0)
                                                               + 0.8 * up, gravity)
    assert len(corners) == 4 and inside
    np.testing.assert_allclose(corners @ up, np.min(feet @ up), atol=1e-12)
    np.testing.assert_allclose(com_ground @ up, np.min(feet @ up), atol=1e-12)
    _, _, outside = base_outputs.support_polygon(feet, feet[0] + 0.5 * (feet[0] - feet[2]),
                                                 gravity)
    assert not outside
    corners, _, inside = base_outputs.support_polygon(feet[:2], feet[0], gravity)
    assert len(corners) == 2 and not inside


def test_support_markers_of_a_standing_quadruped():
    current = settings.validate(values(), SOLO)
    _, _, state = standing(current)
    polygon, disc = base_outputs.support_markers(SOLO, state, current, None, markers.make_marker)
    assert polygon.ns == 'ros_dynamics/support_polygon' and len(polygon.points) == 5
    assert disc.ns == 'ros_dynamics/center_of_mass_projection' and disc.color.g > disc.color.r
    one = settings.validate(values(contact_frames=['FL_FOOT']), SOLO)
    polygon, disc = base_outputs.support_markers(SOLO, state, one, None, markers.make_marker)
    assert polygon.action == polygon.DELETE and disc.color.r > disc.color.g


def test_static_base_and_jacobian_labels():
    current = settings.validate(values(base_pose=[1.0, 2.0, 0.5, 0.0, 0.0, 0.0, 1.0]), SOLO)
    base = static_base(current.base)
    np.testing.assert_allclose(base.q, [1, 2, 0.5, 0, 0, 0, 1])
    assert base.received is None and not base.stale(0.5, 1e9)
    templates = outputs.message_templates(SOLO, current)
    jac = templates.tips[current.tips[0]][2]
    assert jac.layout.dim[1].size == SOLO.nv
    assert jac.layout.dim[1].label == 'cols:' + ','.join(SOLO.v_names)
    assert templates.gravity.name == list(SOLO.actuated_joint_names)


def test_feedforward_of_a_floating_base_holds_the_base_at_rest():
    from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

    from ros_dynamics.ros.trajectory_feedforward import from_message
    current = settings.validate(values(command_joints=['HR_KFE', 'FL_HAA']), SOLO)
    msg = JointTrajectory(joint_names=['FL_KFE', 'HR_HFE'])
    for k, t in enumerate((0.0, 1.0)):
        point = JointTrajectoryPoint(positions=[-1.5 + 0.2 * k, 0.7], velocities=[0.1, 0.2],
                                     accelerations=[0.3, -0.4])
        point.time_from_start.sec = int(t)
        msg.points.append(point)
    trajectory = from_message(msg, SOLO.actuated_joint_names)
    joints = np.array([SOLO.joint_index(j) for j in trajectory.joint_names])
    index = (SOLO.joint_idx_q[joints], SOLO.joint_idx_v[joints])
    q, _, _ = standing(current, base_q=(0.3, 0.1, 0.25, 0.0, 0.0, 0.38941834, 0.92106099))
    out = outputs.feedforward_trajectory(SOLO, current, msg, trajectory, index, q)
    q0, v0 = q.copy(), np.zeros(SOLO.nv)
    q0[index[0]] = trajectory.positions[0]
    a0 = v0.copy()
    v0[index[1]], a0[index[1]] = trajectory.velocities[0], trajectory.accelerations[0]
    tau = SOLO.inverse_dynamics(q0, v0, a0)
    np.testing.assert_allclose(out.points[0].effort, tau[index[1]], atol=1e-9)
    command = outputs.feedforward_command(SOLO, current, q, trajectory, index, 0.0)
    a = SOLO.actuated_v_index
    np.testing.assert_allclose(command.data, tau[a][current.command_index], atol=1e-9)
    assert current.command_joints == ('HR_KFE', 'FL_HAA')
