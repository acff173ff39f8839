"""Floating and planar joints (nq != nv): every algorithm against Pinocchio with the same root
joint on humanoids and quadrupeds, batched; the configuration space (neutral, integrate,
difference); centroidal momentum; torques of a robot standing on its contacts; IK with a
floating base; input errors.
"""
import os

import numpy as np
import pinocchio as pin
from pinocchio_reference import (
    Reference,
    frame_jacobian_time_variation,
    random_state,
    rel_close,
    rel_error,
)
import pytest
from robots import FLOATING, PANDA, SOLO12, TALOS, erd, load, load_floating

from ros_dynamics.engine import (
    IKSolver,
    InvalidInputError,
    ModelError,
    RobotModel,
    ShapeError,
    StanceError,
    rnea_batch,
)
from ros_dynamics.engine.rotations import log_so3

HERE = os.path.dirname(os.path.abspath(__file__))
CONVENTIONS = {'world': pin.WORLD, 'local': pin.LOCAL,
               'local_world_aligned': pin.LOCAL_WORLD_ALIGNED}
# (URDF, root joint): the humanoids and quadrupeds as free flyers, a planar base, an arm with a
# mimic finger on a free flyer, and floating / planar joints inside a tree.
CASES = [(path, 'floating') for path in FLOATING] + [
    (SOLO12, 'planar'), (PANDA, 'floating'),
    (os.path.join(HERE, 'multi_dof_urdf', 'floating_joint.urdf'), 'planar'),
    (os.path.join(HERE, 'multi_dof_urdf', 'planar_joint.urdf'), 'floating')]
BATCH = (2, 2)


def _path(relative):
    return relative if os.path.isabs(relative) else erd(relative)


@pytest.fixture(scope='module', params=CASES, ids=lambda c: f'{os.path.basename(c[0])}-{c[1]}')
def robot(request):
    path = _path(request.param[0])
    model = load_floating(path, request.param[1])
    return model, Reference(model, path)


def _states(model, seed):
    """A batch of states of shape BATCH, each a random configuration and random rates."""
    rng = np.random.default_rng(seed)
    q, qd, qdd = (np.array(x).reshape(BATCH + (-1,))
                  for x in zip(*[random_state(model, rng) for _ in range(np.prod(BATCH))]))
    return q, qd, qdd, rng.normal(size=BATCH + (model.nv,))


def _fixed_link(model):
    """A frame at the origin of the body of the last moving joint (Pinocchio's joint frame)."""
    return next(f for f, b, T in zip(model.frame_names, model.frame_body, model.frame_placement)
                if b == model.n_moving and np.array_equal(T, np.eye(4)))


def kinematics_errors(model, ref, seed=61):
    """Largest relative error per quantity over a batch of states (every frame's pose, the
    leaves' Jacobians, their time derivatives, twists and accelerations).
    """
    q, qd, qdd, _ = _states(model, seed)
    frames = model.leaf_frames
    got = {
        'poses': model.frame_poses(q),
        **{f'J {c}': np.stack([model.jacobian(q, f, c) for f in frames], -3) for c in CONVENTIONS},
        **{f'dJ {c}': np.stack([model.jacobian_time_derivative(q, qd, f, c) for f in frames], -3)
           for c in CONVENTIONS},
        'twist': np.stack([model.frame_twist(q, qd, f, 'local') for f in frames], -2),
        'acceleration': np.stack([model.frame_acceleration(q, qd, qdd, f, 'local_world_aligned')
                                  for f in frames], -2),
    }
    errors = dict.fromkeys(got, 0.0)
    pm, pd = ref.pm, ref.pd
    for i in np.ndindex(BATCH):
        pq, pv, pa = ref.q(q[i]), ref.v(qd[i]), ref.v(qdd[i])
        pin.forwardKinematics(pm, pd, pq, pv, pa)
        pin.computeJointJacobians(pm, pd, pq)
        pin.updateFramePlacements(pm, pd)
        fids = [ref.frame_id(f) for f in model.frame_names]
        expected = {'poses': [pd.oMf[k].homogeneous for k in fids]}
        leaves = [ref.frame_id(f) for f in frames]
        for c, pc in CONVENTIONS.items():
            expected[f'J {c}'] = [pin.getFrameJacobian(pm, pd, k, pc) @ ref.G for k in leaves]
        expected['twist'] = [pin.getFrameVelocity(pm, pd, k, pin.LOCAL).vector for k in leaves]
        expected['acceleration'] = [pin.getFrameClassicalAcceleration(
            pm, pd, k, pin.LOCAL_WORLD_ALIGNED).vector for k in leaves]
        pin.computeJointJacobiansTimeVariation(pm, pd, pq, pv)
        for c, pc in CONVENTIONS.items():
            expected[f'dJ {c}'] = [frame_jacobian_time_variation(ref, pq, pv, k, pc) @ ref.G
                                   for k in leaves]
        for key, value in expected.items():
            errors[key] = max(errors[key], rel_error(got[key][i], np.array(value)))
    return errors


def dynamics_errors(model, ref, seed=62):
    """Largest relative error per algorithm over a batch of states."""
    q, qd, qdd, tau = _states(model, seed)
    frame = _fixed_link(model)
    wrench = np.array([3.0, -2.0, 5.0, 0.4, -0.3, 0.2])
    M = model.mass_matrix(q)
    got = {
        'rnea': model.inverse_dynamics(q, qd, qdd),
        'rnea f_ext': model.inverse_dynamics(q, qd, qdd, {frame: wrench}, f_ext_frame='local'),
        'gravity': model.gravity_torques(q),
        'bias': model.bias_torques(q, qd),
        'mass matrix': M,
        'coriolis': model.coriolis_matrix(q, qd),
        'aba (M qdd)': (M @ model.forward_dynamics(q, qd, tau)[..., None])[..., 0],
        'kinetic energy': model.kinetic_energy(q, qd),
        'potential energy': model.potential_energy(q),
        'com': model.center_of_mass(q),
        'com jacobian': model.center_of_mass_jacobian(q),
        'centroidal matrix': model.centroidal_momentum_matrix(q),
        'centroidal momentum': model.centroidal_momentum(q, qd),
    }
    errors = dict.fromkeys(got, 0.0)
    pm, pd = ref.pm, ref.pd
    fext = [pin.Force.Zero() for _ in range(pm.njoints)]
    fext[pm.getJointId(model.moving_joint_names[-1])] = pin.Force(wrench)
    for i in np.ndindex(BATCH):
        pq, pv, pa = ref.q(q[i]), ref.v(qd[i]), ref.v(qdd[i])
        pin.ccrba(pm, pd, pq, pv)
        Ag, hg = pd.Ag @ ref.G, pd.hg.vector.copy()       # (later calls reuse pd.Ag)
        M_ref = pin.crba(pm, pd, pq)
        M_ref = np.triu(M_ref) + np.triu(M_ref, 1).T
        nle = ref.fold(pin.nonLinearEffects(pm, pd, pq, pv))
        expected = {
            'rnea': ref.fold(pin.rnea(pm, pd, pq, pv, pa)),
            'rnea f_ext': ref.fold(pin.rnea(pm, pd, pq, pv, pa, fext)),
            'gravity': ref.fold(pin.computeGeneralizedGravity(pm, pd, pq)),
            'bias': nle,
            'mass matrix': ref.fold_matrix(M_ref),
            'coriolis': ref.fold_matrix(pin.computeCoriolisMatrix(pm, pd, pq, pv)),
            # ABA compared through M qdd = tau - b, which does not amplify rounding by M's
            # condition number (light hand and foot links make it large).
            'aba (M qdd)': tau[i] - nle,
            'kinetic energy': pin.computeKineticEnergy(pm, pd, pq, pv),
            'potential energy': pin.computePotentialEnergy(pm, pd, pq),
            'com': pin.centerOfMass(pm, pd, pq),
            'com jacobian': pin.jacobianCenterOfMass(pm, pd, pq) @ ref.G,
            'centroidal matrix': Ag,
            'centroidal momentum': hg,
        }
        for key, value in expected.items():
            errors[key] = max(errors[key], rel_error(got[key][i], value))
    if not model.has_mimic:
        # ABA itself where M is well conditioned enough to compare accelerations directly.
        i = (0, 0)
        if np.linalg.cond(M[i]) < 1e6:
            qdd_ref = ref.fold(pin.aba(pm, pd, ref.q(q[i]), ref.v(qd[i]), ref.G @ tau[i]))
            errors['aba'] = rel_error(model.forward_dynamics(q[i], qd[i], tau[i]), qdd_ref)
    return errors


def test_kinematics_match_pinocchio(robot):
    model, ref = robot
    errors = kinematics_errors(model, ref)
    assert max(errors.values()) < 1e-9, errors


def test_dynamics_match_pinocchio(robot):
    model, ref = robot
    errors = dynamics_errors(model, ref)
    assert max(errors.values()) < 1e-9, errors
    assert np.isclose(model.total_mass, pin.computeTotalMass(ref.pm), rtol=1e-12)


def test_configuration_space_matches_pinocchio(robot):
    model, ref = robot
    rng = np.random.default_rng(63)
    q0 = model.random_configuration(rng, size=4)
    q1 = model.random_configuration(rng, size=4)
    v = rng.normal(size=(4, model.nv))
    np.testing.assert_allclose(ref.q(model.neutral()), pin.neutral(ref.pm), atol=0)
    integrated, differences = model.integrate(q0, v, 0.3), model.difference(q0, q1)
    for i in range(4):
        expected = pin.integrate(ref.pm, ref.q(q0[i]), ref.v(v[i]) * 0.3)
        np.testing.assert_allclose(ref.q(integrated[i]), expected, atol=1e-12)
        np.testing.assert_allclose(ref.v(differences[i]),
                                   pin.difference(ref.pm, ref.q(q0[i]), ref.q(q1[i])), atol=1e-12)


def _same_configuration(model, qa, qb, atol):
    """Equal configurations: their difference is zero (a quaternion and its negative agree)."""
    np.testing.assert_allclose(model.difference(qa, qb), 0.0, atol=atol)


@pytest.mark.parametrize('root_joint', ['floating', 'planar'])
def test_integrate_and_difference_round_trip(root_joint):
    model = load_floating(erd(SOLO12), root_joint)
    rng = np.random.default_rng(64)
    q0 = model.random_configuration(rng, size=50)
    q1 = model.random_configuration(rng, size=50)
    # difference then integrate lands on q1; integrate then difference gives v back (turns < pi).
    _same_configuration(model, model.integrate(q0, model.difference(q0, q1)), q1, 1e-10)
    v = rng.normal(size=(50, model.nv))
    np.testing.assert_allclose(model.difference(q0, model.integrate(q0, v, 0.5)), 0.5 * v,
                               atol=1e-10)
    # integrate keeps quaternions and (cos, sin) pairs unit, also over many small steps.
    q = q0[0]
    for _ in range(1000):
        q = model.integrate(q, v[0], 1e-3)
    _, joint, start, _ = model.multi_dof_joints[0]
    unit = q[start + joint.unit_part.start:start + joint.unit_part.stop]
    assert abs(np.linalg.norm(unit) - 1.0) < 1e-12
    _same_configuration(model, q, model.integrate(q0[0], v[0], 1.0), 1e-9)


def test_non_unit_quaternions_are_normalised_and_zero_ones_refused():
    model = load_floating(erd(SOLO12))
    q = model.random_configuration(np.random.default_rng(65))
    scaled = q.copy()
    scaled[3:7] *= 3.7
    np.testing.assert_allclose(model.frame_poses(scaled), model.frame_poses(q), atol=1e-14)
    np.testing.assert_allclose(model.gravity_torques(scaled), model.gravity_torques(q),
                               atol=1e-12)
    zero = q.copy()
    zero[3:7] = 0.0
    with pytest.raises(InvalidInputError, match=r"q\[3:7\]: expected a non-zero quaternion of "
                                                r"joint 'root_joint', got a norm of 0"):
        model.frame_pose(zero, 'FL_FOOT')
    nan = q.copy()
    nan[5] = np.nan
    with pytest.raises(InvalidInputError, match='q: expected finite values'):
        model.mass_matrix(nan)
    planar = load_floating(erd(SOLO12), 'planar')
    flat = planar.neutral()
    flat[2:4] = 0.0
    with pytest.raises(InvalidInputError, match=r"q\[2:4\]: expected a non-zero \(cos, sin\) "
                                                r"pair of joint 'root_joint'"):
        planar.integrate(flat, np.zeros(planar.nv))


def test_names_sizes_and_input_errors():
    model = load_floating(erd(SOLO12))
    assert (model.nq, model.nv) == (19, 18)
    assert model.joint_names[0] == 'root_joint' and model.joint_types[0] == 'floating'
    assert model.q_names[:7] == tuple(f'root_joint_{c}' for c in
                                      ('x', 'y', 'z', 'qx', 'qy', 'qz', 'qw'))
    assert model.v_names[:6] == tuple(f'root_joint_{c}' for c in
                                      ('vx', 'vy', 'vz', 'wx', 'wy', 'wz'))
    assert model.q_names[7:] == model.v_names[6:] == model.actuated_joint_names
    np.testing.assert_array_equal(model.actuated_q_index, np.arange(7, 19))
    np.testing.assert_array_equal(model.actuated_v_index, np.arange(6, 18))
    q = model.neutral()
    np.testing.assert_array_equal(q[:7], [0, 0, 0, 0, 0, 0, 1])
    names, positions = model.joint_state_from_q(q)
    assert names == list(model.actuated_joint_names) and len(positions) == 12
    q2 = model.q_from_names(['FL_KFE', 'root_joint_z'], [-1.2, 0.3])
    assert q2[model.q_names.index('FL_KFE')] == -1.2 and q2[2] == 0.3 and q2[6] == 1.0
    with pytest.raises(ShapeError, match=r'q: expected 19 values \(\[root_joint_x, .*got 18'):
        model.frame_pose(np.zeros(18), 'FL_FOOT')
    with pytest.raises(ShapeError, match=r'qd: expected 18 values .*got 19'):
        model.inverse_dynamics(q, np.zeros(19), np.zeros(18))
    with pytest.raises(ShapeError, match='tau: expected 18 values'):
        model.forward_dynamics(q, np.zeros(18), np.zeros(19))
    with pytest.raises(ShapeError, match=r'v: expected 18 values'):
        model.integrate(q, np.zeros(19))


def test_jacobian_matches_finite_differences_on_the_manifold():
    """``J v`` is the rate of the frame's pose along ``integrate(q, v t)``: v of the free
    flyer is the base's own twist.
    """
    model = load_floating(erd(TALOS))
    rng = np.random.default_rng(66)
    q, v, _ = random_state(model, rng)
    h = 1e-6
    for frame in ('left_sole_link', 'arm_right_7_link', model.root_link):
        Tp = model.frame_pose(model.integrate(q, v, h), frame)
        Tm = model.frame_pose(model.integrate(q, v, -h), frame)
        fd = np.concatenate([(Tp[:3, 3] - Tm[:3, 3]) / (2 * h),
                             log_so3(Tp[:3, :3] @ Tm[:3, :3].T) / (2 * h)])
        np.testing.assert_allclose(model.jacobian(q, frame) @ v, fd, atol=1e-7)


def test_mass_matrix_columns_from_inverse_dynamics_and_aba_round_trip():
    model = load_floating(erd(SOLO12))
    rng = np.random.default_rng(67)
    q, qd, _ = random_state(model, rng)
    zero = np.zeros(model.nv)
    g = model.inverse_dynamics(q, zero, zero)
    columns = np.stack([model.inverse_dynamics(q, zero, e) - g for e in np.eye(model.nv)], 1)
    rel_close(model.mass_matrix(q), columns)
    tau = rng.normal(size=model.nv)
    rel_close(model.inverse_dynamics(q, qd, model.forward_dynamics(q, qd, tau)), tau, rtol=1e-8)


def test_trajectories_of_a_floating_model_take_the_general_path():
    model = load_floating(erd(SOLO12))
    rng = np.random.default_rng(68)
    n = 3 * rnea_batch.min_states(model)
    q, qd, qdd = (np.array(x) for x in zip(*[random_state(model, rng) for _ in range(n)]))
    tau = model.inverse_dynamics(q, qd, qdd)
    rel_close(tau, np.array([model.inverse_dynamics(*s) for s in zip(q, qd, qdd)]), rtol=1e-12)


def test_a_free_floating_robot_conserves_momentum():
    """Without gravity nor torques, the centroidal momentum of a moving robot is constant and
    its rate from forward dynamics is zero: d/dt (A_G v) = A_G qdd + Adot_G v = 0.
    """
    model = load_floating(erd(SOLO12))
    model.update_settings(gravity=(0, 0, 0))
    rng = np.random.default_rng(69)
    q, v, _ = random_state(model, rng)
    qdd = model.forward_dynamics(q, v, np.zeros(model.nv))
    h = 1e-6
    plus = model.centroidal_momentum(model.integrate(q, v, h), v + h * qdd)
    minus = model.centroidal_momentum(model.integrate(q, v, -h), v - h * qdd)
    np.testing.assert_allclose((plus - minus) / (2 * h), 0.0, atol=1e-6)
    np.testing.assert_allclose(model.centroidal_momentum_matrix(q) @ v,
                               model.centroidal_momentum(q, v), atol=1e-12)


# --- standing on contacts -----------------------------------------------------------------------

SOLO_FEET = ['FL_FOOT', 'FR_FOOT', 'HL_FOOT', 'HR_FOOT']


def _standing_solo():
    model = load_floating(erd(SOLO12))
    q = model.neutral()
    q[2] = 0.25
    q[7:] = [0.0, 0.8, -1.6] * 4          # legs bent alike, left and right mirror images
    return model, q


def _check_held(model, q, frames, result, width):
    """RNEA with the contact forces as external wrenches: zero base wrench, the same joint
    torques.
    """
    wrenches = {f: np.concatenate([F, np.zeros(6 - width)]) for f, F in zip(frames, result.forces)}
    zero = np.zeros(model.nv)
    tau = model.inverse_dynamics(q, zero, zero, wrenches)
    base = [i for i in range(model.nv) if i not in set(model.actuated_v_index)]
    np.testing.assert_allclose(tau[base], 0.0, atol=1e-9)
    np.testing.assert_allclose(tau[model.actuated_v_index], result.torques, atol=1e-9)
    np.testing.assert_allclose(result.base_residual, 0.0, atol=1e-9)


@pytest.mark.parametrize('friction', [None, 0.7])
def test_a_symmetric_quadruped_stance_shares_its_weight_symmetrically(friction):
    model, q = _standing_solo()
    result = model.contact_gravity_torques(q, SOLO_FEET, friction=friction)
    _check_held(model, q, SOLO_FEET, result, 3)
    F = result.forces
    weight = model.total_mass * 9.81
    np.testing.assert_allclose(F.sum(axis=0), [0, 0, weight], atol=1e-8)
    # left and right feet carry mirror-image forces (y flips), front pair and hind pair alike
    mirror = np.array([1.0, -1.0, 1.0])
    np.testing.assert_allclose(F[1], F[0] * mirror, atol=1e-8)
    np.testing.assert_allclose(F[3], F[2] * mirror, atol=1e-8)
    assert np.all(F[:, 2] > 0)
    if friction is not None:
        assert np.all(np.hypot(F[:, 0], F[:, 1]) <= friction * F[:, 2] + 1e-9)


def test_a_humanoid_on_two_flat_feet():
    model = load_floating(erd(TALOS))
    q = model.neutral()
    feet = ['left_sole_link', 'right_sole_link']
    for friction in (None, 0.5):
        result = model.contact_gravity_torques(q, feet, contact='wrench', friction=friction)
        assert result.forces.shape == (2, 6) and result.torques.shape == (32,)
        _check_held(model, q, feet, result, 6)
        np.testing.assert_allclose(result.forces[:, 2].sum(), model.total_mass * 9.81, rtol=1e-9)
    batch = np.stack([q, model.integrate(q, np.r_[0.1, 0, 0.2, 0, 0, 0.3, np.zeros(32)])])
    batched = model.contact_gravity_torques(batch, feet, contact='wrench')
    assert batched.torques.shape == (2, 32) and batched.forces.shape == (2, 2, 6)
    np.testing.assert_allclose(batched.torques[0],
                               model.contact_gravity_torques(q, feet, 'wrench').torques,
                               atol=1e-12)


def test_stances_that_cannot_hold_the_robot_are_refused():
    model, q = _standing_solo()
    # One point contact carries no moment unless the center of mass is right above it.
    with pytest.raises(StanceError, match=r"contacts at \['FL_FOOT'\] cannot hold the robot"):
        model.contact_gravity_torques(q, ['FL_FOOT'])
    # The left feet alone: bilateral contacts hold by pulling, unilateral ones cannot (the
    # center of mass lies outside their support line).
    left = ['FL_FOOT', 'HL_FOOT']
    pulled = model.contact_gravity_torques(q, left, contact='wrench')
    np.testing.assert_allclose(pulled.base_residual, 0.0, atol=1e-9)
    with pytest.raises(StanceError, match='friction 0.8.*center of mass at'):
        model.contact_gravity_torques(q, left, friction=0.8)


def test_contact_argument_errors():
    model, q = _standing_solo()
    with pytest.raises(ModelError, match='fixed base'):
        load(erd(SOLO12)).contact_gravity_torques(np.zeros(12), SOLO_FEET)
    with pytest.raises(InvalidInputError, match='contact_frames: expected a non-empty list'):
        model.contact_gravity_torques(q, 'FL_FOOT')
    with pytest.raises(InvalidInputError, match='named twice'):
        model.contact_gravity_torques(q, ['FL_FOOT', 'FL_FOOT'])
    with pytest.raises(InvalidInputError, match="contact: expected 'point' or 'wrench'"):
        model.contact_gravity_torques(q, SOLO_FEET, contact='line')
    with pytest.raises(InvalidInputError, match='friction: expected a coefficient > 0'):
        model.contact_gravity_torques(q, SOLO_FEET, friction=-1.0)
    with pytest.raises(InvalidInputError, match='friction: expected a coefficient > 0'):
        model.contact_gravity_torques(q, SOLO_FEET, friction='high')


# --- IK with a floating base ---------------------------------------------------------------------

def test_ik_moves_the_legs_and_holds_the_base_at_the_seed():
    model = load_floating(erd(SOLO12))
    rng = np.random.default_rng(70)
    seed = model.random_configuration(rng)
    goal = seed.copy()
    goal[model.actuated_q_index] += rng.normal(scale=0.2, size=12)
    target = model.frame_pose(goal, 'FL_FOOT')
    result = IKSolver(model).solve('FL_FOOT', target, seed, position_only=True, timeout=0.5,
                                   rng=0)
    assert result.success, result.message
    np.testing.assert_array_equal(result.q[:7], seed[:7])
    np.testing.assert_allclose(model.frame_pose(result.q, 'FL_FOOT')[:3, 3], target[:3, 3],
                               atol=1e-5)


def test_a_floating_model_is_not_a_fixed_one():
    path = erd(SOLO12)
    fixed, floating = load(path), RobotModel.from_urdf_file(path, root_joint='floating')
    q = fixed.random_configuration(np.random.default_rng(71))
    qf = floating.neutral()
    qf[7:] = q
    # At the neutral base pose the kinematics agree; gravity torques do not: the fixed model
    # hangs from its base, the floating one must also hold its base.
    np.testing.assert_allclose(floating.frame_poses(qf), fixed.frame_poses(q), atol=1e-14)
    assert floating.total_mass > fixed.total_mass
    np.testing.assert_allclose(floating.gravity_torques(qf)[2], floating.total_mass * 9.81,
                               rtol=1e-12)
