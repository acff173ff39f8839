"""Inertial-parameter regressors: Pinocchio's regressors on every robot of example-robot-data,
``Y @ pi`` against RNEA (mimic joints and payloads included), the payload regressor against the
change a payload makes to the torques, and the parameter conversions.
"""
import zlib

import numpy as np
import pinocchio as pin
from pinocchio_reference import Reference, random_state
import pytest
from robots import (
    COMPARED,
    DEMO_ARM,
    FLOATING,
    PANDA,
    TREE_URDF,
    all_example_urdfs,
    erd,
    load,
)

from ros_dynamics.engine import (
    InvalidInputError,
    Payload,
    RobotModel,
    ShapeError,
    UnknownFrameError,
    UrdfError,
    regressors,
)


def rel_err(actual, desired):
    return float(np.max(np.abs(actual - desired)) / max(1.0, float(np.max(np.abs(desired)))))


def pinocchio_columns(model, pm):
    """Columns of Pinocchio's regressor in our body order (bodies matched by joint name)."""
    cols = []
    for name in model.moving_joint_names:
        j = pm.getJointId(name)
        cols.extend(range(10 * (j - 1), 10 * j))
    return cols


def robots_pinocchio_reads():
    """Every example-robot-data URDF with moving joints that both libraries read."""
    out = []
    for relative in all_example_urdfs():
        try:
            model = load(erd(relative))
        except UrdfError:           # xacro sources and empty files: the URDF tests cover them
            continue
        if model.nq:
            out.append(relative)
    return out


@pytest.mark.parametrize('relative', robots_pinocchio_reads())
def test_regressor_equals_pinocchio_and_rnea(relative):
    path = erd(relative)
    model = load(path)
    ref = Reference(model, path)
    cols = pinocchio_columns(model, ref.pm)
    rng = np.random.default_rng(zlib.crc32(relative.encode()))
    for _ in range(3):
        q, v, a = random_state(model, rng)
        Y = model.joint_torque_regressor(q, v, a)
        assert Y.shape == (model.nv, 10 * model.n_moving)
        Y_pin = pin.computeJointTorqueRegressor(ref.pm, ref.pd, ref.q(q), ref.v(v), ref.v(a))
        assert rel_err(Y, ref.fold(Y_pin[:, cols])) < 1e-10
        # Pinocchio's bodies are ours: its parameters are ours in the same order.
        pi_pin = np.concatenate([ref.pm.inertias[ref.pm.getJointId(n)].toDynamicParameters()
                                 for n in model.moving_joint_names])
        np.testing.assert_allclose(model.inertial_parameters(), pi_pin, rtol=0, atol=1e-12)
        assert rel_err(Y @ model.inertial_parameters(),
                       ref.fold(pin.rnea(ref.pm, ref.pd, ref.q(q), ref.v(v), ref.v(a)))) < 1e-10


@pytest.mark.parametrize('robot', FLOATING)
def test_regressor_of_a_floating_base_equals_pinocchio_and_rnea(robot):
    path = erd(robot)
    model = RobotModel.from_urdf_file(path, root_joint='floating')
    ref = Reference(model, path)
    cols = pinocchio_columns(model, ref.pm)
    rng = np.random.default_rng(zlib.crc32(robot.encode()))
    q, v, a = random_state(model, rng)
    Y = model.joint_torque_regressor(q, v, a)
    assert Y.shape == (model.nv, 10 * model.n_moving)
    Y_pin = pin.computeJointTorqueRegressor(ref.pm, ref.pd, ref.q(q), ref.v(v), ref.v(a))
    assert rel_err(Y, ref.fold(Y_pin[:, cols])) < 1e-10
    assert rel_err(Y @ model.inertial_parameters(), model.inverse_dynamics(q, v, a)) < 1e-10


@pytest.mark.parametrize('robot', ['tree', 'demo', PANDA])
def test_regressor_times_parameters_is_rnea_with_mimic_joints_and_payloads(robot):
    model = RobotModel.from_urdf_string(TREE_URDF) if robot == 'tree' else \
        load(DEMO_ARM if robot == 'demo' else erd(robot))
    rng = np.random.default_rng(3)
    Q, V, A = (rng.uniform(-1, 1, size=(5, model.nq)) for _ in range(3))
    Y = model.joint_torque_regressor(Q, V, A)
    pi_bare = model.inertial_parameters()
    np.testing.assert_allclose(Y @ pi_bare, model.inverse_dynamics(Q, V, A), atol=1e-10)
    frames = [model.leaf_frames[0], model.frame_names[len(model.frame_names) // 2]]
    model.update_settings(payloads=[Payload(frames[0], 1.7, [0.02, -0.03, 0.05],
                                            np.diag([0.01, 0.02, 0.015])),
                                    Payload(frames[1], 0.4, [0.1, 0, 0])],
                          rotor_inertia=np.zeros(model.nq))
    np.testing.assert_allclose(Y @ model.inertial_parameters(), model.inverse_dynamics(Q, V, A),
                               atol=1e-10)
    assert not np.allclose(model.inertial_parameters(), pi_bare)
    # One batch equals one state at a time.
    np.testing.assert_allclose(Y[2], model.joint_torque_regressor(Q[2], V[2], A[2]), atol=1e-12)


@pytest.mark.parametrize('robot', COMPARED[:3] + ['tree'])
def test_payload_regressor_gives_the_torques_a_payload_adds(robot):
    model = RobotModel.from_urdf_string(TREE_URDF) if robot == 'tree' else load(erd(robot))
    rng = np.random.default_rng(11)
    Q, V, A = (rng.uniform(-1.5, 1.5, size=(4, model.nq)) for _ in range(3))
    frame = model.leaf_frames[-1]
    tau_bare = model.inverse_dynamics(Q, V, A)
    payload = Payload(frame, 2.3, [0.05, -0.02, 0.11], [[0.02, 0.001, 0.0], [0.001, 0.03, 0.002],
                                                       [0.0, 0.002, 0.025]])
    model.update_settings(payloads=[payload])
    added = model.inverse_dynamics(Q, V, A) - tau_bare
    pi_p = regressors.parameters_from_inertia(payload.mass, payload.com, payload.inertia)
    Y_p = model.payload_regressor(frame, Q, V, A)
    assert Y_p.shape == (4, model.nv, 10)
    np.testing.assert_allclose(Y_p @ pi_p, added, atol=1e-10 * max(1, np.max(np.abs(added))))


def test_payload_wrench_columns_equal_pinocchio_frame_body_regressor():
    path = erd(PANDA)
    model = load(path)
    ref = Reference(model, path)
    rng = np.random.default_rng(5)
    q, v, a = random_state(model, rng)
    for frame in ('panda_hand', 'panda_link8', 'panda_link4'):
        pin.rnea(ref.pm, ref.pd, ref.q(q), ref.v(v), ref.v(a))
        pin.updateFramePlacements(ref.pm, ref.pd)
        W_local = pin.frameBodyRegressor(ref.pm, ref.pd, ref.frame_id(frame))
        state = model.kinematics(q, v, a)
        b = model.frame_body[model.frame_index(frame)]
        T = state.frame_pose(frame)
        with_gravity = state.A_world_body[b] - np.r_[model.settings.gravity, 0, 0, 0]
        W = regressors.wrench_columns(T, state.V_world_body[b], with_gravity)
        # Pinocchio's wrench is in the frame's axes about its origin; ours at the world origin.
        R, p = T[:3, :3], T[:3, 3]
        force, torque = R @ W_local[:3], R @ W_local[3:]
        np.testing.assert_allclose(W, np.vstack([force, torque + np.cross(p, force.T).T]),
                                   atol=1e-10 * max(1, np.max(np.abs(W))))


def test_parameter_conversions_round_trip_and_pseudo_inertia_tells_physical_bodies():
    rng = np.random.default_rng(2)
    # A solid box 0.1 x 0.2 x 0.3 m of 1.3 kg, turned and moved.
    box_inertia = 1.3 / 12 * np.diag([0.04 + 0.09, 0.01 + 0.09, 0.01 + 0.04])
    R = np.linalg.qr(rng.normal(size=(3, 3)))[0]
    com = np.array([0.05, -0.1, 0.2])
    inertia = R @ box_inertia @ R.T
    pi = regressors.parameters_from_inertia(1.3, com, inertia)
    assert pi.shape == (10,) and pi[0] == 1.3
    np.testing.assert_allclose(pi[1:4], 1.3 * com)
    mass, com_back, inertia_back = regressors.inertia_from_parameters(pi)
    np.testing.assert_allclose([mass, *com_back], [1.3, *com], atol=1e-14)
    np.testing.assert_allclose(inertia_back, inertia, atol=1e-14)
    J = regressors.pseudo_inertia(pi)
    np.testing.assert_allclose(regressors.parameters_from_pseudo_inertia(J), pi, atol=1e-14)
    # The second moment of a box about its center is m/12 diag(a^2, b^2, c^2).
    J_center = regressors.pseudo_inertia(regressors.parameters_from_inertia(1.3, np.zeros(3),
                                                                            box_inertia))
    np.testing.assert_allclose(np.diag(J_center)[:3], 1.3 / 12 * np.array([0.01, 0.04, 0.09]))
    assert np.linalg.eigvalsh(J)[0] > 0
    # Triangle inequality broken (I_zz > I_xx + I_yy): positive definite inertia, no body.
    impossible = regressors.parameters_from_inertia(1.0, np.zeros(3), np.diag([0.1, 0.1, 0.3]))
    assert np.linalg.eigvalsh(regressors.pseudo_inertia(impossible))[0] < 0
    batch = regressors.parameters_from_inertia(np.ones(4), np.zeros((4, 3)), inertia)
    assert batch.shape == (4, 10)


def test_regressor_errors_name_the_argument():
    model = load(DEMO_ARM)
    q = np.zeros(model.nq)
    with pytest.raises(ShapeError, match=r'v: expected 6 values'):
        model.joint_torque_regressor(q, np.zeros(5), q)
    with pytest.raises(InvalidInputError, match='regressors need .* q, v and a'):
        regressors.regressor_of_state(model.kinematics(q, q))
    with pytest.raises(UnknownFrameError, match="unknown frame 'nope'"):
        model.payload_regressor('nope', q, q, q)
    with pytest.raises(ShapeError, match=r'pi: expected shape \(\.\.\., 10\)'):
        regressors.inertia_from_parameters(np.zeros(9))
    with pytest.raises(ShapeError, match=r'com: expected shape \(\.\.\., 3\)'):
        regressors.parameters_from_inertia(1.0, np.zeros(2), np.eye(3))
