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
from .exceptions import ModelError, ShapeError
from .kinematics import as_finite_array
from .spatial import cross_force


def forward_dynamics(model, state, tau, f_ext=None, f_ext_frame='world', *, friction=False):
    """``qdd`` (..., nq) from a state computed with q and qd, torques ``tau`` (..., nq) and
    optional external wrenches (as in :func:`ros_dynamics.engine.rnea.inverse_dynamics`).
    """
    state.require('forward dynamics')
    tau = as_finite_array(tau, 'tau')
    if tau.shape[-1:] != (model.nq,):
        raise ShapeError(f'tau: expected {model.nq} values, got shape {tau.shape}')
    try:
        tau = np.broadcast_to(tau, state.batch_shape + (model.nq,))
    except ValueError:
        raise ShapeError(f'tau: batch shape {tau.shape[:-1]} does not match q\'s '
                         f'{state.batch_shape}') from None
    settings = state.settings
    if friction:
        tau = tau - rnea.friction_torques(settings, state.qd)
    f = None
    if f_ext:
        f = rnea.external_body_forces(model, state, f_ext, f_ext_frame)
    if model.has_mimic:
        return _solve_with_mass_matrix(model, state, tau, f)
    return _articulated_body(model, settings, state, tau, f)


def _solve_with_mass_matrix(model, state, tau, f_ext_bodies):
    M = crba.mass_matrix(model, state)
    b = rnea.bias_torques(model, state)
    if f_ext_bodies is not None:
        b = b - rnea.joint_torques(model, state, f_ext_bodies)
    try:
        return np.linalg.solve(M, (tau - b)[..., None])[..., 0]
    except np.linalg.LinAlgError:
        raise _singular(model, model.joint_names,
                        np.diagonal(M, axis1=-2, axis2=-1) > 0) from None


def _singular(model, names, moves_inertia):
    """The error for a singular mass matrix, naming the joints (``names``) that move no
    inertia (``moves_inertia``: (..., len(names)) booleans).
    """
    still = ~np.all(moves_inertia.reshape(-1, len(names)), axis=0)
    culprits = [n for n, s in zip(names, still) if s] or '(a combination of joints)'
    return ModelError(f'forward dynamics: the mass matrix is singular; joints that move no '
                      f'mass or inertia: {culprits}')


def _articulated_body(model, settings, state, tau, f_ext_bodies):
    IA = crba.world_spatial_inertias(settings, state).copy()
    V = state.V_world_body
    pA = cross_force(V, (IA @ V[..., None])[..., 0])
    if f_ext_bodies is not None:
        pA = pA - f_ext_bodies
    S = state.S_world
    c = state.S_dot_world * state.qd_joint[..., None]
    rotor = settings.rotor_inertia
    n = model.n_moving
    U = np.empty(S.shape)
    D = np.empty(S.shape[:-1])
    u = np.empty(S.shape[:-1])
    with np.errstate(divide='ignore', invalid='ignore'):     # D <= 0 is reported below
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
    if not np.all(D > 0):
        raise _singular(model, model.moving_joint_names, D > 0)
    a = np.empty(state.batch_shape + (model.n_bodies, 6))
    a[..., 0, :] = rnea.gravity_acceleration(settings)
    qdd = np.empty(state.batch_shape + (n,))
    for k in range(n):
        b, p = k + 1, model.joint_parent_body[k]
        ak = a[..., p, :] + c[..., k, :]
        qdd[..., k] = (u[..., k] - np.einsum('...i,...i->...', U[..., k, :], ak)) / D[..., k]
        a[..., b, :] = ak + S[..., k, :] * qdd[..., k, None]
    return qdd
