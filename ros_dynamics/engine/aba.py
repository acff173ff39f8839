"""Forward dynamics by the articulated-body algorithm (Featherstone), in world coordinates.

With every quantity at the world origin in world axes no transforms are needed between bodies:

1. (from kinematics) body velocities ``v_b``, joint motions ``S_k`` and ``c_k = S_k' qd_k``;
2. backward over joints k (body b = k + 1, parent body p):
   ``U = IA_b S_k``, ``D = S_k . U + I_rotor,k``, ``u = tau_k - S_k . pA_b``,
   ``IA_p += IA_b - U U^T / D``, ``pA_p += pA_b + (IA_b - U U^T / D) c_k + U u / D``;
3. forward: ``a = a_p + c_k``, ``qdd_k = (u - U . a) / D``, ``a_b = a + S_k qdd_k``,
   from ``a_0 = [-g; 0]``.

Mimic joints couple joints outside the tree structure ABA exploits; models with mimic joints use
``qdd = M^-1 (tau - b)`` (Cholesky) instead.
"""
import numpy as np

from . import crba, rnea
from .exceptions import InvalidInputError, ShapeError


def forward_dynamics(model, state, tau, f_ext=None, f_ext_frame='world', *, friction=False):
    """``qdd`` (..., nq) from a state computed with q and qd, torques ``tau`` (..., nq) and
    optional external wrenches (as in :func:`ros_dynamics.engine.rnea.inverse_dynamics`).
    """
    if state.V_world_body is None:
        raise InvalidInputError('forward dynamics needs q and qd')
    tau = np.asarray(tau, dtype=float)
    if tau.shape[-1:] != (model.nq,):
        raise ShapeError(f'tau: expected {model.nq} values, got shape {tau.shape}')
    if not np.all(np.isfinite(tau)):
        raise InvalidInputError('tau: expected finite values')
    tau = np.broadcast_to(tau, state.batch_shape + (model.nq,))
    if friction:
        tau = tau - rnea.friction_torques(model, state.qd)
    f = None
    if f_ext:
        f = rnea.external_body_forces(model, state, f_ext, f_ext_frame)
    if model.has_mimic:
        return _solve_with_mass_matrix(model, state, tau, f)
    return _articulated_body(model, state, tau, f)


def _solve_with_mass_matrix(model, state, tau, f_ext_bodies):
    M = crba.mass_matrix(model, state)
    b = rnea.bias_torques(model, state)
    if f_ext_bodies is not None:
        b = b - rnea.joint_torques(model, state, f_ext_bodies)
    return np.linalg.solve(M, (tau - b)[..., None])[..., 0]


def _articulated_body(model, state, tau, f_ext_bodies):
    IA = crba.world_spatial_inertias(model, state).copy()
    V = state.V_world_body
    pA = rnea._cross_force(V, (IA @ V[..., None])[..., 0])
    if f_ext_bodies is not None:
        pA = pA - f_ext_bodies
    S = state.S_world
    c = state.S_dot_world * state.qd_joint[..., None]
    rotor = model.dynamics.rotor_inertia
    n = model.n_moving
    U = np.empty(S.shape)
    D = np.empty(S.shape[:-1])
    u = np.empty(S.shape[:-1])
    for k in range(n - 1, -1, -1):
        b, p = k + 1, model.joint_parent_body[k]
        Sk = S[..., k, :]
        U[..., k, :] = (IA[..., b, :, :] @ Sk[..., None])[..., 0]
        D[..., k] = np.einsum('...i,...i->...', Sk, U[..., k, :]) + rotor[k]
        u[..., k] = tau[..., k] - np.einsum('...i,...i->...', Sk, pA[..., b, :])
        Uk = U[..., k, :]
        Ia = IA[..., b, :, :] - Uk[..., :, None] * Uk[..., None, :] / D[..., k, None, None]
        pa = pA[..., b, :] + (Ia @ c[..., k, :, None])[..., 0] \
            + Uk * (u[..., k] / D[..., k])[..., None]
        IA[..., p, :, :] += Ia
        pA[..., p, :] += pa
    a = np.empty(state.batch_shape + (model.n_bodies, 6))
    a[..., 0, :] = rnea.gravity_acceleration(model)
    qdd = np.empty(state.batch_shape + (n,))
    for k in range(n):
        b, p = k + 1, model.joint_parent_body[k]
        ak = a[..., p, :] + c[..., k, :]
        qdd[..., k] = (u[..., k] - np.einsum('...i,...i->...', U[..., k, :], ak)) / D[..., k]
        a[..., b, :] = ak + S[..., k, :] * qdd[..., k, None]
    return qdd
