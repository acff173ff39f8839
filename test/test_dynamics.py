"""Inverse dynamics, gravity, mass matrix, Coriolis, forward dynamics, energy, payload.

Checked against Pinocchio on real robots and by cross-algorithm identities.
"""

import numpy as np
import pinocchio as pin
from pinocchio_reference import Reference, random_state, rel_close
import pytest
from robots import COMPARED, DEMO_ARM, PANDA, TALOS, TREE_URDF, erd, load

from ros_dynamics.engine import (
    InvalidInputError,
    ModelError,
    Payload,
    RobotModel,
    ShapeError,
    aba,
    rnea_batch,
)


@pytest.fixture(scope='module', params=COMPARED)
def robot(request):
    path = erd(request.param)
    model = load(path)
    return model, Reference(model, path)


def test_dynamics_match_pinocchio(robot):
    model, ref = robot
    pm, pd = ref.pm, ref.pd
    rng = np.random.default_rng(41)
    for _ in range(4):
        q, qd, qdd = random_state(model, rng)
        pq, pv, pa = ref.q(q), ref.v(qd), ref.v(qdd)
        rel_close(model.inverse_dynamics(q, qd, qdd), ref.fold(pin.rnea(pm, pd, pq, pv, pa)))
        rel_close(model.gravity_torques(q), ref.fold(pin.computeGeneralizedGravity(pm, pd, pq)))
        rel_close(model.bias_torques(q, qd), ref.fold(pin.nonLinearEffects(pm, pd, pq, pv)))
        M_ref = pin.crba(pm, pd, pq)
        M_ref = np.triu(M_ref) + np.triu(M_ref, 1).T     # Pinocchio fills one triangle
        M = model.mass_matrix(q)
        rel_close(M, ref.fold_matrix(M_ref))
        np.testing.assert_array_equal(M, M.T)
        rel_close(model.coriolis_matrix(q, qd),
                  ref.fold_matrix(pin.computeCoriolisMatrix(pm, pd, pq, pv)))
        rel_close(model.kinetic_energy(q, qd), pin.computeKineticEnergy(pm, pd, pq, pv))
        rel_close(model.potential_energy(q), pin.computePotentialEnergy(pm, pd, pq))
        rel_close(model.center_of_mass(q), pin.centerOfMass(pm, pd, pq))
        rel_close(model.center_of_mass_jacobian(q), pin.jacobianCenterOfMass(pm, pd, pq) @ ref.G)
        assert np.isclose(model.total_mass, pin.computeTotalMass(pm), rtol=1e-12)
        tau = model.inverse_dynamics(q, qd, qdd)
        a = model.forward_dynamics(q, qd, tau)
        # Both solve M a = tau - b; compare through M a, which does not amplify rounding by
        # M's condition number (the nearly massless hand links of talos make it ~1e10).
        rel_close(M @ a, ref.fold(pin.nonLinearEffects(pm, pd, pq, pv)) * -1 + tau, rtol=1e-7)
        if not model.has_mimic and np.linalg.cond(M) < 1e6:
            rel_close(a, ref.fold(pin.aba(pm, pd, pq, pv, ref.G @ tau)), rtol=1e-7)


def test_the_articulated_body_recursion_matches_pinocchio(robot, monkeypatch):
    """Small models solve through the mass matrix; the recursion larger ones take is checked
    here on the same robots.
    """
    model, ref = robot
    monkeypatch.setattr(aba, 'MASS_MATRIX_MAX_DOF', 0)
    rng = np.random.default_rng(44)
    q, qd, qdd = random_state(model, rng)
    tau = model.inverse_dynamics(q, qd, qdd)
    qdd_aba = model.forward_dynamics(q, qd, tau)
    M = model.mass_matrix(q)
    rel_close(M @ qdd_aba, M @ qdd, rtol=1e-7)
    if not model.has_mimic and np.linalg.cond(M) < 1e6:
        rel_close(qdd_aba, ref.fold(pin.aba(ref.pm, ref.pd, ref.q(q), ref.v(qd), ref.G @ tau)),
                  rtol=1e-7)


def test_mass_matrix_columns_from_inverse_dynamics(robot):
    model, _ = robot
    rng = np.random.default_rng(42)
    q, _, _ = random_state(model, rng)
    zero = np.zeros(model.nq)
    g = model.inverse_dynamics(q, zero, zero)
    rel_close(g, model.gravity_torques(q))
    columns = np.stack([model.inverse_dynamics(q, zero, e) - g for e in np.eye(model.nq)], axis=1)
    rel_close(model.mass_matrix(q), columns)


def test_forward_then_inverse_dynamics_round_trip(robot):
    model, _ = robot
    rng = np.random.default_rng(43)
    q, qd, _ = random_state(model, rng)
    tau = rng.normal(size=model.nq)
    qdd = model.forward_dynamics(q, qd, tau)
    rel_close(model.inverse_dynamics(q, qd, qdd), tau, rtol=1e-7)
    M = model.mass_matrix(q)
    np.testing.assert_allclose(M @ qdd, tau - model.bias_torques(q, qd), atol=1e-7)


@pytest.fixture(scope='module', params=['demo', 'tree', 'panda'])
def small(request):
    if request.param == 'demo':
        return load(DEMO_ARM)
    if request.param == 'tree':
        return RobotModel.from_urdf_string(TREE_URDF)
    return load(erd(PANDA))


def test_mass_matrix_is_symmetric_positive_definite(small):
    rng = np.random.default_rng(44)
    for _ in range(10):
        q, _, _ = random_state(small, rng)
        M = small.mass_matrix(q)
        np.testing.assert_array_equal(M, M.T)
        assert np.linalg.eigvalsh(M).min() > 0


def test_coriolis_identities(small):
    model = small
    rng = np.random.default_rng(45)
    q, qd, _ = random_state(model, rng)
    C = model.coriolis_matrix(q, qd)
    # C qd + g = bias torques
    np.testing.assert_allclose(C @ qd + model.gravity_torques(q), model.bias_torques(q, qd),
                               atol=1e-10)
    # Mdot - 2C is skew-symmetric, Mdot by central differences along qd
    h = 1e-6
    Mdot = (model.mass_matrix(q + h * qd) - model.mass_matrix(q - h * qd)) / (2 * h)
    N = Mdot - 2 * C
    np.testing.assert_allclose(N, -N.T, atol=1e-7)
    # C is the Christoffel-symbol matrix of M: C_ij = sum_k G_ijk qd_k,
    # G_ijk = (dM_ij/dq_k + dM_ik/dq_j - dM_jk/dq_i) / 2
    n = model.nq
    dM = np.stack([(model.mass_matrix(q + h * e) - model.mass_matrix(q - h * e)) / (2 * h)
                   for e in np.eye(n)], axis=-1)           # dM[i, j, k] = dM_ij / dq_k
    gamma = 0.5 * (dM + np.transpose(dM, (0, 2, 1)) - np.transpose(dM, (2, 1, 0)))
    np.testing.assert_allclose(C, gamma @ qd, atol=1e-7)


def test_external_wrench_term_is_minus_jacobian_transpose(small):
    model = small
    rng = np.random.default_rng(46)
    q, qd, qdd = random_state(model, rng)
    frame = model.frame_names[-1]
    wrench = rng.normal(size=6)
    base = model.inverse_dynamics(q, qd, qdd)
    J = model.jacobian(q, frame, 'local_world_aligned')
    with_world = model.inverse_dynamics(q, qd, qdd, {frame: wrench})
    np.testing.assert_allclose(with_world - base, -J.T @ wrench, atol=1e-10)
    J_local = model.jacobian(q, frame, 'local')
    with_local = model.inverse_dynamics(q, qd, qdd, {frame: wrench}, f_ext_frame='local')
    np.testing.assert_allclose(with_local - base, -J_local.T @ wrench, atol=1e-10)
    # forward dynamics sees the same wrench
    qdd2 = model.forward_dynamics(q, qd, base, {frame: wrench})
    np.testing.assert_allclose(model.inverse_dynamics(q, qd, qdd2, {frame: wrench}), base,
                               atol=1e-7)
    # holding a wrench exerted by the robot: tau = J^T F
    np.testing.assert_allclose(model.wrench_torques(q, frame, wrench), J.T @ wrench, atol=1e-12)


def test_external_wrench_on_pinocchio_local_joint_frame():
    path = erd(PANDA)
    model = load(path)
    ref = Reference(model, path)
    rng = np.random.default_rng(47)
    q, qd, qdd = random_state(model, rng)
    frame = 'panda_link7'                        # the body frame of joint 7
    wrench = rng.normal(size=6)
    fext = [pin.Force.Zero() for _ in range(ref.pm.njoints)]
    fext[ref.pm.getJointId('panda_joint7')] = pin.Force(wrench)
    expected = ref.fold(pin.rnea(ref.pm, ref.pd, ref.q(q), ref.v(qd), ref.v(qdd), fext))
    rel_close(model.inverse_dynamics(q, qd, qdd, {frame: wrench}, f_ext_frame='local'), expected)


def test_rotor_inertia_adds_to_the_diagonal_and_to_inverse_dynamics():
    model = load(DEMO_ARM)
    rng = np.random.default_rng(48)
    q, qd, qdd = random_state(model, rng)
    M0, tau0 = model.mass_matrix(q), model.inverse_dynamics(q, qd, qdd)
    # Motor-side inertia J_m reflected through the gear ratio N: J_m N^2.
    model.update_settings(rotor_inertia={'shoulder_pan_joint': 2e-4 * 100 ** 2,
                                         'elbow_joint': 1e-4 * 50 ** 2})
    reflected = np.array([2.0, 0, 0.25, 0, 0, 0])
    np.testing.assert_allclose(model.settings.rotor_inertia, reflected)
    np.testing.assert_allclose(model.mass_matrix(q) - M0, np.diag(reflected), atol=1e-12)
    np.testing.assert_allclose(model.inverse_dynamics(q, qd, qdd) - tau0, reflected * qdd,
                               atol=1e-10)
    tau = rng.normal(size=6)
    expected = np.linalg.solve(model.mass_matrix(q), tau - model.bias_torques(q, qd))
    np.testing.assert_allclose(model.forward_dynamics(q, qd, tau), expected, atol=1e-10)
    with pytest.raises(ModelError, match='rotor inertia'):
        model.update_settings(rotor_inertia={'elbow_joint': -1.0})


def test_friction_is_opt_in():
    model = load(DEMO_ARM)
    rng = np.random.default_rng(49)
    q, qd, qdd = random_state(model, rng)
    plain = model.inverse_dynamics(q, qd, qdd)
    with_friction = model.inverse_dynamics(q, qd, qdd, friction=True)
    np.testing.assert_allclose(with_friction - plain,
                               model.joint_damping * qd + model.joint_friction * np.sign(qd))
    np.testing.assert_allclose(
        model.inverse_dynamics(q, qd, model.forward_dynamics(q, qd, plain, friction=True),
                               friction=True), plain, atol=1e-9)


def test_payload_equals_a_link_in_the_description():
    xml = open(DEMO_ARM).read()
    com, mass = np.array([0.01, 0.02, 0.05]), 1.7
    inertia = np.array([[0.010, 0.001, 0.0], [0.001, 0.012, 0.0], [0.0, 0.0, 0.008]])
    extra = f'''<link name="payload"><inertial><origin xyz="{com[0]} {com[1]} {com[2]}"/>
      <mass value="{mass}"/><inertia ixx="0.010" ixy="0.001" ixz="0" iyy="0.012" iyz="0"
      izz="0.008"/></inertial></link>
      <joint name="payload_joint" type="fixed"><parent link="tool0"/><child link="payload"/>
      </joint></robot>'''
    with_link = RobotModel.from_urdf_string(xml.replace('</robot>', extra))
    model = RobotModel.from_urdf_string(xml)
    model.update_settings(payloads=[Payload('tool0', mass, com, inertia)])
    rng = np.random.default_rng(50)
    q, qd, qdd = random_state(model, rng)
    np.testing.assert_allclose(model.inverse_dynamics(q, qd, qdd),
                               with_link.inverse_dynamics(q, qd, qdd), atol=1e-11)
    np.testing.assert_allclose(model.gravity_torques(q), with_link.gravity_torques(q), atol=1e-11)
    np.testing.assert_allclose(model.total_mass, with_link.total_mass)
    model.update_settings(payloads=[Payload('tool0', 0.0)])      # removed again
    np.testing.assert_allclose(model.gravity_torques(q),
                               RobotModel.from_urdf_string(xml).gravity_torques(q), atol=1e-12)
    with pytest.raises(ModelError, match='payload'):
        model.update_settings(payloads=[Payload('tool0', -1.0)])


def test_gravity_is_configurable():
    model = load(DEMO_ARM)
    q = np.array([0.1, -0.5, 0.4, 0.2, 0.3, 0.0])
    g0 = model.gravity_torques(q)
    model.update_settings(gravity=[0, 0, -2 * 9.81])
    np.testing.assert_allclose(model.gravity_torques(q), 2 * g0, atol=1e-12)
    model.update_settings(gravity=[0, 0, 0])
    np.testing.assert_allclose(model.gravity_torques(q), 0, atol=1e-12)
    with pytest.raises(ModelError, match='gravity'):
        model.update_settings(gravity=[0, 0, np.nan])


def test_energy_is_conserved_in_an_unactuated_swing():
    model = load(DEMO_ARM)
    q, qd = np.array([0.3, -0.4, 0.8, 0.1, 0.5, 0.0]), np.zeros(6)
    zero = np.zeros(6)

    def f(x):
        return np.concatenate([x[6:], model.forward_dynamics(x[:6], x[6:], zero)])

    x, dt = np.concatenate([q, qd]), 1e-3
    energies = []
    for _ in range(1000):
        k1 = f(x)
        k2 = f(x + 0.5 * dt * k1)
        k3 = f(x + 0.5 * dt * k2)
        k4 = f(x + dt * k3)
        x = x + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        energies.append(model.kinetic_energy(x[:6], x[6:]) + model.potential_energy(x[:6]))
    swing = np.ptp([model.kinetic_energy(x[:6], x[6:])])
    assert np.max(np.abs(np.array(energies) - energies[0])) < 1e-6
    assert model.kinetic_energy(x[:6], x[6:]) > 1.0 and swing == 0.0   # it really moved


def test_batched_dynamics_equal_looped_results():
    model = load(erd(TALOS))
    rng = np.random.default_rng(51)
    states = [random_state(model, rng) for _ in range(6)]
    q, qd, qdd = (np.array(x).reshape(2, 3, model.nq) for x in zip(*states))
    tau = model.inverse_dynamics(q, qd, qdd)
    g = model.gravity_torques(q)
    M = model.mass_matrix(q)
    a = model.forward_dynamics(q, qd, tau)
    assert tau.shape == (2, 3, model.nq) and M.shape == (2, 3, model.nq, model.nq)
    for idx in np.ndindex(2, 3):
        np.testing.assert_allclose(tau[idx], model.inverse_dynamics(q[idx], qd[idx], qdd[idx]),
                                   atol=1e-12)
        np.testing.assert_allclose(g[idx], model.gravity_torques(q[idx]), atol=1e-12)
        np.testing.assert_allclose(M[idx], model.mass_matrix(q[idx]), atol=1e-12)
        np.testing.assert_allclose(a[idx], model.forward_dynamics(q[idx], qd[idx], tau[idx]),
                                   rtol=1e-6, atol=1e-6)


def test_trajectory_inverse_dynamics_match_pinocchio(robot):
    """Long batches take the trajectory kernel (rnea_batch), over a chunk boundary."""
    model, ref = robot
    rng = np.random.default_rng(53)
    n = rnea_batch.CHUNK + 37
    assert n >= rnea_batch.min_states(model)
    states = [random_state(model, rng) for _ in range(n)]
    q, qd, qdd = (np.array(x) for x in zip(*states))
    tau = model.inverse_dynamics(q, qd, qdd)
    expected = [ref.fold(pin.rnea(ref.pm, ref.pd, ref.q(q[i]), ref.v(qd[i]), ref.v(qdd[i])))
                for i in range(n)]
    rel_close(tau, np.array(expected))
    # The same states through the one-state code path, and in a (2, k) batch shape.
    rel_close(tau[-3:], np.array([model.inverse_dynamics(*s) for s in states[-3:]]))
    k = n // 2
    rel_close(model.inverse_dynamics(q[:2 * k].reshape(2, k, -1), qd[:2 * k].reshape(2, k, -1),
                                     qdd[:2 * k].reshape(2, k, -1)),
              tau[:2 * k].reshape(2, k, -1))


def test_trajectory_inverse_dynamics_with_settings():
    """Rotor inertia, friction, a payload and another gravity reach the trajectory kernel."""
    model = load(erd(PANDA))
    rng = np.random.default_rng(54)
    n = 3 * rnea_batch.min_states(model)
    q, qd, qdd = (np.array(x) for x in zip(*[random_state(model, rng) for _ in range(n)]))
    model.settings = model.make_settings(
        rotor_inertia={model.joint_names[1]: 0.3, model.joint_names[3]: 0.1},
        payloads=[Payload('panda_hand', 1.5, (0.0, 0.02, 0.1), np.diag([0.01, 0.02, 0.03]))],
        gravity=(0.5, -1.0, -9.7))
    tau = model.inverse_dynamics(q, qd, qdd, friction=True)
    one_by_one = [model.inverse_dynamics(q[i], qd[i], qdd[i], friction=True) for i in range(n)]
    rel_close(tau, np.array(one_by_one), rtol=1e-12)


def test_dynamics_input_errors():
    model = load(DEMO_ARM)
    z = np.zeros(6)
    with pytest.raises(ShapeError, match='qdd: expected 6 values'):
        model.inverse_dynamics(z, z, np.zeros(7))
    with pytest.raises(InvalidInputError, match='qd: expected finite values'):
        model.inverse_dynamics(z, [np.inf] + [0] * 5, z)
    with pytest.raises(ShapeError, match=r"f_ext\['tool0'\]: expected a wrench"):
        model.inverse_dynamics(z, z, z, {'tool0': [1, 2, 3]})
    with pytest.raises(ShapeError, match='tau: expected 6 values'):
        model.forward_dynamics(z, z, np.zeros(3))
    with pytest.raises(InvalidInputError, match='f_ext_frame'):
        model.inverse_dynamics(z, z, z, {'tool0': np.zeros(6)}, f_ext_frame='body')
