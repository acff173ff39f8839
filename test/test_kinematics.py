"""Forward kinematics, Jacobians, twists, accelerations and relative motion.

Checked against Pinocchio on real robots, against finite differences, and batch against loop.
"""
import warnings

import numpy as np
import pinocchio as pin
from pinocchio_reference import Reference, frame_jacobian_time_variation, random_state
import pytest
from robots import COMPARED, DEMO_ARM, TREE_URDF, all_example_urdfs, erd, load

from ros_dynamics.engine import (
    InvalidInputError,
    Payload,
    RobotModel,
    ShapeError,
    UrdfError,
    kinematics,
    rnea,
)
from ros_dynamics.engine.rotations import log_so3
from ros_dynamics.engine.spatial import exp_se3

CONVENTIONS = {'world': pin.WORLD, 'local': pin.LOCAL,
               'local_world_aligned': pin.LOCAL_WORLD_ALIGNED}


@pytest.fixture(scope='module', params=COMPARED)
def robot(request):
    path = erd(request.param)
    model = load(path)
    return model, Reference(model, path)


def test_poses_and_jacobians_match_pinocchio(robot):
    model, ref = robot
    rng = np.random.default_rng(11)
    for _ in range(5):
        q, qd, qdd = random_state(model, rng)
        pq = ref.q(q)
        pin.forwardKinematics(ref.pm, ref.pd, pq, ref.v(qd), ref.v(qdd))
        pin.computeJointJacobians(ref.pm, ref.pd, pq)
        pin.updateFramePlacements(ref.pm, ref.pd)
        state = model.kinematics(q, qd, qdd)
        poses = state.frame_poses()
        for i, frame in enumerate(model.frame_names):
            fid = ref.frame_id(frame)
            np.testing.assert_allclose(poses[i], ref.pd.oMf[fid].homogeneous, atol=1e-10,
                                       err_msg=frame)
            for conv, pconv in CONVENTIONS.items():
                J = model.jacobian(q, frame, conv)
                J_ref = pin.getFrameJacobian(ref.pm, ref.pd, fid, pconv) @ ref.G
                np.testing.assert_allclose(J, J_ref, atol=1e-10, err_msg=f'{frame} {conv}')
                for kind in ('classical', 'spatial'):
                    if conv == 'local_world_aligned' and kind == 'spatial':
                        continue    # Pinocchio's LWA spatial acceleration is checked below
                    a = model.frame_acceleration(q, qd, qdd, frame, conv, kind=kind)
                    get = (pin.getFrameClassicalAcceleration if kind == 'classical'
                           else pin.getFrameAcceleration)
                    np.testing.assert_allclose(a, get(ref.pm, ref.pd, fid, pconv).vector,
                                               atol=1e-9, err_msg=f'{frame} {conv} {kind}')
                v = model.frame_twist(q, qd, frame, conv)
                np.testing.assert_allclose(
                    v, pin.getFrameVelocity(ref.pm, ref.pd, fid, pconv).vector, atol=1e-10)


def test_jacobian_time_derivative_matches_pinocchio_local_and_world(robot):
    model, ref = robot
    rng = np.random.default_rng(12)
    q, qd, _ = random_state(model, rng)
    pin.computeJointJacobiansTimeVariation(ref.pm, ref.pd, ref.q(q), ref.v(qd))
    pin.updateFramePlacements(ref.pm, ref.pd)
    for frame in model.frame_names[-4:]:
        fid = ref.frame_id(frame)
        for conv in ('local', 'world'):
            dJ = frame_jacobian_time_variation(ref, ref.q(q), ref.v(qd), fid,
                                               CONVENTIONS[conv]) @ ref.G
            np.testing.assert_allclose(model.jacobian_time_derivative(q, qd, frame, conv), dJ,
                                       atol=1e-9, err_msg=f'{frame} {conv}')


# Pinocchio loads these too, but they are not fixed-base trees of supported joints.
EXPECTED_REFUSALS = {
    # Pinocchio refuses it as well: "No name given for the robot" (an empty xacro output).
    'ur_description/urdf/ur3.urdf': 'has no <link>',
}
#: Loaded leniently, as Pinocchio loads them; refused in strict mode.
LENIENT = {
    # A mimic joint whose leader does not exist: it stays independent (Pinocchio, which ignores
    # <mimic> by default, loads it; with mimic=True it refuses: "The parent joint of the mimic
    # joint is not in the tree").
    'alex_description/urdf/alex_psyonic_hands.urdf': "<mimic> names unknown joint 'index_q1'",
}


@pytest.mark.parametrize('relative', all_example_urdfs())
def test_every_example_robot_loads_and_agrees_with_pinocchio(relative):
    path = erd(relative)
    if relative in EXPECTED_REFUSALS:
        with pytest.raises(UrdfError, match=EXPECTED_REFUSALS[relative]):
            load(path)
        return
    if relative in LENIENT:
        with pytest.raises(UrdfError, match=LENIENT[relative]):
            RobotModel.from_urdf_file(path, strict=True)
    model = load(path)
    ref = Reference(model, path)
    rng = np.random.default_rng(13)
    q, _, _ = random_state(model, rng)
    pin.framesForwardKinematics(ref.pm, ref.pd, ref.q(q))
    state = model.kinematics(q)
    poses = state.frame_poses()
    for i, frame in enumerate(model.frame_names):
        fid = ref.frame_id(frame)
        np.testing.assert_allclose(poses[i], ref.pd.oMf[fid].homogeneous, atol=1e-10)
    tip = model.frame_names[-1]
    if model.nq == 0:           # a single rigid body (Pinocchio's Jacobians crash on nv = 0)
        assert model.jacobian(q, tip).shape == (6, 0)
        return
    pin.computeJointJacobians(ref.pm, ref.pd, ref.q(q))
    J_ref = pin.getFrameJacobian(ref.pm, ref.pd, ref.frame_id(tip), pin.LOCAL) @ ref.G
    np.testing.assert_allclose(model.jacobian(q, tip, 'local'), J_ref, atol=1e-10)


# --- finite differences ------------------------------------------------------------------------

@pytest.fixture(scope='module', params=['demo', 'tree', 'panda'])
def fd_model(request):
    if request.param == 'demo':
        return load(DEMO_ARM)
    if request.param == 'tree':
        return RobotModel.from_urdf_string(TREE_URDF)
    return load(erd(COMPARED[0]))


def _pose_rate(model, q, qd, frame, h=1e-6, point=None):
    """Central-difference [p'; w] (world axes) of a frame (or point) along q + t qd."""
    Tp = model.frame_pose(q + h * qd, frame)
    Tm = model.frame_pose(q - h * qd, frame)
    off = np.zeros(3) if point is None else point
    pp = Tp[:3, :3] @ off + Tp[:3, 3]
    pm = Tm[:3, :3] @ off + Tm[:3, 3]
    w = log_so3(Tp[:3, :3] @ Tm[:3, :3].T) / (2 * h)
    return np.concatenate([(pp - pm) / (2 * h), w])


def test_jacobians_match_finite_differences(fd_model):
    model = fd_model
    rng = np.random.default_rng(21)
    q, qd, _ = random_state(model, rng)
    point = np.array([0.05, -0.02, 0.1])
    for frame in model.frame_names[1:]:
        T = model.frame_pose(q, frame)
        for pt in (None, point):
            fd = _pose_rate(model, q, qd, frame, point=pt)
            J = model.jacobian(q, frame, 'local_world_aligned', point=pt)
            np.testing.assert_allclose(J @ qd, fd, atol=1e-7)
            np.testing.assert_allclose(model.frame_twist(q, qd, frame, point=pt), fd, atol=1e-7)
            R = T[:3, :3]
            local = np.concatenate([R.T @ fd[:3], R.T @ fd[3:]])
            np.testing.assert_allclose(model.jacobian(q, frame, 'local', point=pt) @ qd, local,
                                       atol=1e-7)
        # world: velocity of the body point at the origin
        fd = _pose_rate(model, q, qd, frame)
        v_origin = fd[:3] - np.cross(fd[3:], T[:3, 3])
        np.testing.assert_allclose(model.jacobian(q, frame, 'world') @ qd,
                                   np.concatenate([v_origin, fd[3:]]), atol=1e-7)


@pytest.mark.parametrize('conv', ['world', 'local', 'local_world_aligned'])
def test_jacobian_time_derivative_matches_finite_differences(fd_model, conv):
    model = fd_model
    rng = np.random.default_rng(22)
    q, qd, _ = random_state(model, rng)
    h = 1e-6
    frame = model.frame_names[-1]
    point = np.array([0.1, 0.0, -0.03])
    fd = (model.jacobian(q + h * qd, frame, conv, point) -
          model.jacobian(q - h * qd, frame, conv, point)) / (2 * h)
    np.testing.assert_allclose(model.jacobian_time_derivative(q, qd, frame, conv, point), fd,
                               atol=1e-7)
    np.testing.assert_allclose(model.jacobian_drift(q, qd, frame, conv, point), fd @ qd,
                               atol=1e-6)


def _trajectory(model, rng):
    """A smooth joint trajectory q(t) = q0 + v t + a t^2 / 2 + s sin(t), with derivatives."""
    q0, v, a = random_state(model, rng)
    s = rng.normal(size=model.nq) * 0.3

    def at(t):
        return (q0 + v * t + 0.5 * a * t * t + s * np.sin(t), v + a * t + s * np.cos(t),
                a - s * np.sin(t))
    return at


def test_classical_acceleration_matches_finite_differences(fd_model):
    model = fd_model
    traj = _trajectory(model, np.random.default_rng(23))
    h = 1e-4
    frame = model.frame_names[-1]
    q, qd, qdd = traj(0.0)
    for conv in ('local_world_aligned', 'local'):
        acc = model.frame_acceleration(q, qd, qdd, frame, conv)
        vp = model.frame_twist(*traj(h)[:2], frame, 'local_world_aligned')
        vm = model.frame_twist(*traj(-h)[:2], frame, 'local_world_aligned')
        fd = (vp - vm) / (2 * h)            # [p''; w'] in world axes
        if conv == 'local':
            R = model.frame_pose(q, frame)[:3, :3]
            fd = np.concatenate([R.T @ fd[:3], R.T @ fd[3:]])
        np.testing.assert_allclose(acc, fd, atol=1e-6)


def test_relative_motion_matches_finite_differences_in_the_observer_frame():
    model = RobotModel.from_urdf_string(TREE_URDF)
    traj = _trajectory(model, np.random.default_rng(24))
    frame_i, frame_j, observer, expressed = 'slider', 'right', 'left', 'torso'

    def r_in_observer(t):
        q = traj(t)[0]
        T_i, T_j, T_l = (model.frame_pose(q, f) for f in (frame_i, frame_j, observer))
        return T_l[:3, :3].T @ (T_i[:3, 3] - T_j[:3, 3])

    def w_rel_in_observer(t):
        q, qd = traj(t)[:2]
        w = (model.frame_twist(q, qd, frame_i)[3:] - model.frame_twist(q, qd, frame_j)[3:])
        return model.frame_pose(q, observer)[:3, :3].T @ w

    h = 1e-4
    q, qd, qdd = traj(0.0)
    rel = model.relative_motion(q, qd, qdd, frame_i, frame_j, observer, expressed)
    R_l = model.frame_pose(q, observer)[:3, :3]
    R_k = model.frame_pose(q, expressed)[:3, :3]
    to_k = R_k.T @ R_l                      # observer axes -> expressed-in axes
    vel = (r_in_observer(h) - r_in_observer(-h)) / (2 * h)
    acc = (r_in_observer(h) - 2 * r_in_observer(0) + r_in_observer(-h)) / h ** 2
    wdot = (w_rel_in_observer(h) - w_rel_in_observer(-h)) / (2 * h)
    np.testing.assert_allclose(rel.position, to_k @ r_in_observer(0.0), atol=1e-12)
    np.testing.assert_allclose(rel.velocity, to_k @ vel, atol=1e-7)
    np.testing.assert_allclose(rel.acceleration, to_k @ acc, atol=1e-5)
    np.testing.assert_allclose(rel.angular_velocity, to_k @ w_rel_in_observer(0.0), atol=1e-12)
    np.testing.assert_allclose(rel.angular_acceleration, to_k @ wdot, atol=1e-6)
    # Observed from the world (the fixed root), velocities are plain differences.
    fixed = model.relative_motion(q, qd, qdd, frame_i, frame_j, model.root_link,
                                  model.root_link)
    v_i = model.frame_twist(q, qd, frame_i)
    v_j = model.frame_twist(q, qd, frame_j)
    np.testing.assert_allclose(fixed.velocity, v_i[:3] - v_j[:3], atol=1e-12)


# --- batches and errors ------------------------------------------------------------------------

def test_batched_results_equal_looped_results():
    model = load(erd(COMPARED[0]))
    rng = np.random.default_rng(31)
    states = [random_state(model, rng) for _ in range(12)]
    q, qd, qdd = (np.array(x).reshape(3, 4, model.nq) for x in zip(*states))
    frame = 'panda_hand'
    batched = {
        'pose': model.frame_pose(q, frame),
        'jac': model.jacobian(q, frame, 'local'),
        'twist': model.frame_twist(q, qd, frame),
        'acc': model.frame_acceleration(q, qd, qdd, frame),
        'dJ': model.jacobian_time_derivative(q, qd, frame, 'local_world_aligned'),
    }
    assert batched['pose'].shape == (3, 4, 4, 4)
    assert batched['jac'].shape == (3, 4, 6, model.nq)
    for idx in np.ndindex(3, 4):
        np.testing.assert_allclose(batched['pose'][idx], model.frame_pose(q[idx], frame),
                                   atol=1e-14)
        np.testing.assert_allclose(batched['jac'][idx], model.jacobian(q[idx], frame, 'local'),
                                   atol=1e-14)
        np.testing.assert_allclose(batched['twist'][idx],
                                   model.frame_twist(q[idx], qd[idx], frame), atol=1e-14)
        np.testing.assert_allclose(batched['acc'][idx],
                                   model.frame_acceleration(q[idx], qd[idx], qdd[idx], frame),
                                   atol=1e-13)
    poses = model.frame_poses(q)
    assert poses.shape == q.shape[:-1] + (len(model.frame_names), 4, 4)
    np.testing.assert_allclose(poses[..., model.frame_index(frame), :, :], batched['pose'])


def test_kinematics_input_errors():
    model = load(DEMO_ARM)
    with pytest.raises(ShapeError, match=r'q: expected 6 values .*got 5'):
        model.frame_pose(np.zeros(5), 'tool0')
    with pytest.raises(InvalidInputError, match='q: expected finite values'):
        model.frame_pose([0, 0, np.nan, 0, 0, 0], 'tool0')
    with pytest.raises(InvalidInputError, match="expressed_in: expected one of"):
        model.jacobian(np.zeros(6), 'tool0', 'body')
    with pytest.raises(ShapeError, match='qd: batch shape'):
        model.frame_twist(np.zeros((2, 6)), np.zeros((3, 6)), 'tool0')


def test_a_kinematic_pass_reads_the_settings_it_is_given():
    model = load(DEMO_ARM)
    q = np.full(6, 0.4)
    heavy = model.make_settings(payloads=[Payload('tool0', 3.0, [0, 0, 0.1])])
    state = kinematics.forward_kinematics(model, q, settings=heavy)
    assert state.settings is heavy and model.settings is not heavy
    model.update_settings(payloads=[Payload('tool0', 3.0, [0, 0, 0.1])])
    np.testing.assert_allclose(rnea.gravity_torques(model, state), model.gravity_torques(q))
    with pytest.raises(InvalidInputError, match='settings: expected DynamicSettings made for '
                                                'this model'):
        kinematics.forward_kinematics(model, q, settings=load(DEMO_ARM).settings)


def test_se3_exp_describes_a_revolute_joint():
    # A single revolute joint about z through (1, 0, 0): its motion is exp of the twist.
    xml = '''<robot name="one"><link name="a"/><link name="b"/>
      <joint name="j" type="revolute"><parent link="a"/><child link="b"/><origin xyz="1 0 0"/>
      <axis xyz="0 0 1"/><limit lower="-3" upper="3" effort="1" velocity="1"/></joint></robot>'''
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        model = RobotModel.from_urdf_string(xml)
    S = model.jacobian(np.zeros(1), 'b', 'world')[:, 0]
    np.testing.assert_allclose(S, [0, -1, 0, 0, 0, 1])   # [p x z; z] with p = (1, 0, 0)
    T0 = model.frame_pose(np.zeros(1), 'b')
    np.testing.assert_allclose(model.frame_pose(np.array([0.7]), 'b'), exp_se3(S * 0.7) @ T0,
                               atol=1e-14)
