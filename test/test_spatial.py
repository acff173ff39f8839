"""SE(3), twists, wrenches, spatial inertia and Euler's rigid-body equations."""
import numpy as np
import pytest

from ros_dynamics.engine import euler_angular_acceleration
from ros_dynamics.engine import spatial as sp
from ros_dynamics.engine.rotations import exp_so3, skew


def random_transforms(n, seed=7):
    rng = np.random.default_rng(seed)
    return sp.transform(exp_so3(rng.normal(size=(n, 3))), rng.normal(size=(n, 3)))


def test_exp_log_se3_round_trip_and_edges():
    rng = np.random.default_rng(1)
    xi = rng.normal(size=(200, 6))
    xi[:, 3:] *= (np.pi - 1e-3) / np.maximum(np.linalg.norm(xi[:, 3:], axis=1, keepdims=True),
                                             np.pi)
    np.testing.assert_allclose(sp.log_se3(sp.exp_se3(xi)), xi, atol=1e-10)
    for w_norm in (0.0, 1e-12, 1e-6, 1e-3, 3.0):
        x = np.array([0.3, -0.2, 1.0, 0, 0, w_norm])
        np.testing.assert_allclose(sp.log_se3(sp.exp_se3(x)), x, atol=1e-12)
    pure = sp.exp_se3([1.0, 2.0, 3.0, 0, 0, 0])
    np.testing.assert_allclose(pure[:3, 3], [1, 2, 3])


def test_exp_se3_integrates_a_constant_twist():
    # Screw motion: the body frame's pose after following twist xi (in world) for unit time
    # equals the product of many small steps.
    xi = np.array([0.2, -0.1, 0.4, 0.5, -0.3, 0.9])
    step = np.eye(4)
    small = sp.transform(exp_so3(xi[3:] / 4096), xi[:3] / 4096)
    T_small = sp.exp_se3(xi / 4096)
    for _ in range(4096):
        step = T_small @ step
    np.testing.assert_allclose(step, sp.exp_se3(xi), atol=1e-9)
    assert np.abs(T_small - small).max() < 1e-6


def test_inverse_transform():
    T = random_transforms(10)
    np.testing.assert_allclose(T @ sp.inverse_transform(T), np.broadcast_to(np.eye(4), T.shape),
                               atol=1e-12)


def test_adjoint_maps_twists_between_frames():
    # A point moving with body twist V_b (in b) has the same velocity computed in a.
    rng = np.random.default_rng(2)
    T_a_b = random_transforms(1)[0]
    V_b = rng.normal(size=6)
    V_a = sp.adjoint(T_a_b) @ V_b
    p_b = rng.normal(size=3)
    v_point_b = V_b[:3] + np.cross(V_b[3:], p_b)
    p_a = T_a_b[:3, :3] @ p_b + T_a_b[:3, 3]
    v_point_a = V_a[:3] + np.cross(V_a[3:], p_a)
    np.testing.assert_allclose(v_point_a, T_a_b[:3, :3] @ v_point_b, atol=1e-12)
    # Adjoint is a homomorphism: Ad(T1 T2) = Ad(T1) Ad(T2)
    T1, T2 = random_transforms(2, seed=4)
    np.testing.assert_allclose(sp.adjoint(T1 @ T2), sp.adjoint(T1) @ sp.adjoint(T2), atol=1e-12)


def test_wrench_transform_is_dual_to_the_adjoint():
    rng = np.random.default_rng(3)
    T_a_b = random_transforms(1, seed=9)[0]
    F_b, V_b = rng.normal(size=6), rng.normal(size=6)
    # Power is frame independent.
    assert np.isclose(sp.transform_wrench(T_a_b, F_b) @ (sp.adjoint(T_a_b) @ V_b), F_b @ V_b)


def test_cross_products():
    rng = np.random.default_rng(5)
    v, m, f = rng.normal(size=(3, 6))
    np.testing.assert_allclose(sp.motion_cross_matrix(v) @ m, sp.cross_motion(v, m), atol=1e-14)
    np.testing.assert_allclose(sp.force_cross_matrix(v) @ f, sp.cross_force(v, f), atol=1e-14)
    np.testing.assert_allclose(sp.force_cross_matrix(v), -sp.motion_cross_matrix(v).T)
    np.testing.assert_allclose(sp.cross_motion(v, v), 0, atol=1e-14)
    # Derivative of the adjoint: d/dt Ad(T) = crm(V_world) Ad(T) along T' = [V]^ T.
    T = random_transforms(1, seed=6)[0]
    dt = 1e-6
    T2 = sp.exp_se3(v * dt) @ T
    np.testing.assert_allclose((sp.adjoint(T2) - sp.adjoint(T)) / dt,
                               sp.motion_cross_matrix(v) @ sp.adjoint(T), atol=1e-4)


def test_spatial_inertia_gives_momentum_and_energy():
    rng = np.random.default_rng(8)
    mass, com = 2.5, rng.normal(size=3)
    A = rng.normal(size=(3, 3))
    I_c = A @ A.T + np.eye(3)
    I = sp.spatial_inertia(mass, com, I_c)
    np.testing.assert_allclose(I, I.T)
    assert np.all(np.linalg.eigvalsh(I) > 0)
    V = rng.normal(size=6)
    v_com = V[:3] + np.cross(V[3:], com)
    h = I @ V
    np.testing.assert_allclose(h[:3], mass * v_com)
    np.testing.assert_allclose(h[3:], np.cross(com, mass * v_com) + I_c @ V[3:])
    np.testing.assert_allclose(0.5 * V @ h, 0.5 * mass * v_com @ v_com + 0.5 * V[3:] @ I_c @ V[3:])


def _simulate_free_body(I, w0, t_end, dt):
    def f(w):
        return euler_angular_acceleration(I, w, np.zeros(3))
    w, ws = w0.copy(), [w0.copy()]
    for _ in range(int(t_end / dt)):
        k1 = f(w)
        k2 = f(w + 0.5 * dt * k1)
        k3 = f(w + 0.5 * dt * k2)
        k4 = f(w + dt * k3)
        w = w + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        ws.append(w.copy())
    return np.array(ws)


def test_euler_equations_conserve_energy_and_momentum_magnitude():
    I = np.diag([1.0, 2.0, 3.0])
    ws = _simulate_free_body(I, np.array([0.3, 1.0, -0.5]), 20.0, 1e-3)
    energy = 0.5 * np.einsum('ti,ij,tj->t', ws, I, ws)
    momentum = np.linalg.norm(ws @ I, axis=1)   # |I w| is conserved in body axes
    assert np.ptp(energy) / energy[0] < 1e-9
    assert np.ptp(momentum) / momentum[0] < 1e-9


@pytest.mark.parametrize('axis, unstable', [(0, False), (1, True), (2, False)])
def test_intermediate_axis_is_unstable(axis, unstable):
    # Spin about a principal axis plus a tiny disturbance: the intermediate axis (tennis
    # racket) flips, the smallest and largest stay near their axis.
    I = np.diag([1.0, 2.0, 3.0])
    w0 = np.full(3, 1e-4)
    w0[axis] = 2.0
    ws = _simulate_free_body(I, w0, 30.0, 2e-3)
    deviation = np.max(np.abs(np.delete(ws, axis, axis=1)))
    assert (deviation > 0.5) == unstable
    assert np.min(ws[:, axis]) < 0 if unstable else np.min(ws[:, axis]) > 1.9


def test_euler_equations_with_torque():
    I = np.diag([0.5, 1.0, 2.0])
    w = np.array([0.0, 0.0, 0.0])
    np.testing.assert_allclose(euler_angular_acceleration(I, w, [1.0, 1.0, 1.0]), [2, 1, 0.5])
    # Gyroscopic term only: w x (I w)
    w = np.array([1.0, 2.0, 0.0])
    np.testing.assert_allclose(euler_angular_acceleration(I, w, np.zeros(3)),
                               np.linalg.solve(I, -np.cross(w, I @ w)))
    assert skew(w).shape == (3, 3)
