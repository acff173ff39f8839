"""Forward dynamics by the articulated-body algorithm (Featherstone), in world coordinates.

With every quantity at the world origin in world axes no transforms are needed between bodies:

1. (from kinematics) body velocities ``v_b``, joint motions ``S_k`` and ``c_k = S_k' qd_k``;
2. backward over joints k (body b = k + 1, parent body p):
   ``U = IA_b S_k``, ``D = S_k . U + I_rotor,k``, ``u = tau_k - S_k . pA_b``,
   ``IA_p += IA_b - U U^T / D``, ``pA_p += pA_b + (IA_b - U U^T / D) c_k + U u / D``;
3. forward: ``a = a_p + c_k``, ``qdd_k = (u - U . a) / D``, ``a_b = a + S_k qdd_k``,
   from ``a_0 = [-g; 0]``.

A joint with several degrees of freedom (floating, planar) takes the same steps with ``S_k``
(6, nv_k), ``D`` (nv_k, nv_k) and ``D^-1`` for the division.

Mimic joints couple joints outside the tree structure ABA exploits; models with mimic joints use
``qdd = M^-1 (tau - b)`` instead, and so do models of at most :data:`MASS_MATRIX_MAX_DOF`
degrees of freedom: there the mass matrix, the bias torques and one solve take a fixed handful
of NumPy calls, where this recursion takes a dozen per joint (measured on talos, 32 joints:
about 3.5 times faster).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike

from . import crba, rnea
from .exceptions import ModelError, ShapeError
from .kinematics import as_finite_array
from .spatial import cross_force

if TYPE_CHECKING:
    from .kinematics import KinematicState
    from .model import Model

#: Largest number of degrees of freedom solved through the mass matrix (an O(n^3) solve, whose
#: rounding grows with the condition number of M) instead of the articulated-body recursion.
MASS_MATRIX_MAX_DOF = 64


def forward_dynamics(model: Model, state: KinematicState, tau: ArrayLike,
                     f_ext: dict | None = None, f_ext_frame: str = 'world', *,
                     friction: bool = False):
    """``qdd`` (..., nv) from a state computed with q and qd, torques ``tau`` (..., nv) and
    optional external wrenches (as in :func:`ros_dynamics.engine.rnea.inverse_dynamics`).
    """
    state.require('forward dynamics')
    tau = as_finite_array(tau, 'tau')
    if tau.shape[-1:] != (model.nv,):
        raise ShapeError(f'tau: expected {model.nv} values, got shape {tau.shape}')
    try:
        tau = np.broadcast_to(tau, state.batch_shape + (model.nv,))
    except ValueError:
        raise ShapeError(f'tau: batch shape {tau.shape[:-1]} does not match q\'s '
                         f'{state.batch_shape}') from None
    settings = state.settings
    if friction:
        tau = tau - rnea.friction_torques(settings, state.qd)
    f = None
    if f_ext:
        f = rnea.external_body_forces(model, state, f_ext, f_ext_frame)
    if model.has_mimic or model.n_dof <= MASS_MATRIX_MAX_DOF:
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
        # Per coordinate of v (a floating base's six among them), not per joint.
        raise _singular(model, model.v_names,
                        np.diagonal(M, axis1=-2, axis2=-1) > 0) from None


def _singular(model, names, moves_inertia):
    """The error for a singular mass matrix, naming the joints or coordinates (``names``) that
    move no inertia (``moves_inertia``: (..., len(names)) booleans).
    """
    still = ~np.all(moves_inertia.reshape(-1, len(names)), axis=0)
    culprits = [n for n, s in zip(names, still) if s] or '(a combination of joints)'
    return ModelError(f'forward dynamics: the mass matrix is singular; joints that move no '
                      f'mass or inertia: {culprits}')


def _articulated_body(model, settings, state, tau, f_ext_bodies):
    IA = rnea.world_spatial_inertias(settings, state).copy()
    V = state.V_world_body
    pA = cross_force(V, (IA @ V[..., None])[..., 0])
    if f_ext_bodies is not None:
        pA = pA - f_ext_bodies
    S = state.S_world
    c = state.S_dot_world * state.qd_joint[..., None]
    rotor = settings.rotor_inertia
    n = model.n_moving
    # One-DOF joints: U (..., n_dof, 6), D and u (..., n_dof) at the joint's dof; multi-DOF
    # joints k: multi[k] = (U (..., 6, nv), D^-1 (..., nv, nv), u (..., nv), c_k (..., 6)).
    U = np.empty(S.shape)
    D = np.ones(S.shape[:-1])
    u = np.empty(S.shape[:-1])
    multi = {}
    with np.errstate(divide='ignore', invalid='ignore'):     # D <= 0 is reported below
        for k in range(n - 1, -1, -1):
            b, p, d = k + 1, model.joint_parent_body[k], model.joint_dof_start[k]
            if model.joint_models[k].nv == 1:
                Sk = S[..., d, :]
                U[..., d, :] = (IA[..., b, :, :] @ Sk[..., None])[..., 0]
                D[..., d] = np.einsum('...i,...i->...', Sk, U[..., d, :]) + rotor[d]
                u[..., d] = tau[..., d] - np.einsum('...i,...i->...', Sk, pA[..., b, :])
                Ud = U[..., d, :]
                Ia = IA[..., b, :, :] - Ud[..., :, None] * Ud[..., None, :] / D[..., d, None, None]
                pa = pA[..., b, :] + (Ia @ c[..., d, :, None])[..., 0] \
                    + Ud * (u[..., d] / D[..., d])[..., None]
            else:
                Ia, pa, multi[k] = _multi_dof_step(model, k, IA[..., b, :, :], pA[..., b, :], S, c,
                                                   tau, rotor)
            IA[..., p, :, :] += Ia
            pA[..., p, :] += pa
    if not np.all(D > 0):
        raise _singular(model, [model.moving_joint_names[j] for j in model.dof_joint], D > 0)
    a = np.empty(state.batch_shape + (model.n_bodies, 6))
    a[..., 0, :] = settings.base_acceleration
    qdd = np.empty(state.batch_shape + (model.n_dof,))
    for k in range(n):
        b, p, d = k + 1, model.joint_parent_body[k], model.joint_dof_start[k]
        if k in multi:
            Uk, D_inv, uk, ck = multi[k]
            ak = a[..., p, :] + ck
            nv = Uk.shape[-1]
            qdd[..., d:d + nv] = (D_inv @ (uk - (ak[..., None, :] @ Uk)[..., 0, :])[..., None]
                                  )[..., 0]
            a[..., b, :] = ak + (qdd[..., None, d:d + nv] @ S[..., d:d + nv, :])[..., 0, :]
            continue
        ak = a[..., p, :] + c[..., d, :]
        qdd[..., d] = (u[..., d] - np.einsum('...i,...i->...', U[..., d, :], ak)) / D[..., d]
        a[..., b, :] = ak + S[..., d, :] * qdd[..., d, None]
    return qdd


def _multi_dof_step(model, k, IA_b, pA_b, S, c, tau, rotor):
    """Backward step of the multi-DOF joint k: what it passes to its parent (``Ia``, ``pa``)
    and what the forward pass needs, ``(U, D^-1, u, c_k)``.
    """
    d = model.joint_dof_start[k]
    dofs = slice(d, d + model.joint_models[k].nv)
    Sk = S[..., dofs, :]                                         # (..., nv, 6)
    Uk = IA_b @ np.swapaxes(Sk, -1, -2)                          # (..., 6, nv)
    Dk = Sk @ Uk + np.diag(rotor[dofs])
    try:
        D_inv = np.linalg.inv(Dk)
    except np.linalg.LinAlgError:
        raise _singular(model, [model.moving_joint_names[k]],
                        np.zeros(Dk.shape[:-2] + (1,), dtype=bool)) from None
    uk = tau[..., dofs] - (Sk @ pA_b[..., None])[..., 0]
    ck = np.sum(c[..., dofs, :], axis=-2)
    UD = Uk @ D_inv
    Ia = IA_b - UD @ np.swapaxes(Uk, -1, -2)
    pa = pA_b + (Ia @ ck[..., None])[..., 0] + (UD @ uk[..., None])[..., 0]
    return Ia, pa, (Uk, D_inv, uk, ck)
