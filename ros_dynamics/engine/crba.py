"""Joint-space mass matrix (composite-rigid-body algorithm) and Coriolis matrix.

World-coordinate formulation, one row and column per degree of freedom (a floating joint has
six): with ``I_b`` the 6x6 spatial inertia of body b in world and ``Ic_k`` the composite inertia
of everything dof k moves, ``M[j, k] = S_j . Ic_k S_k`` for j an ancestor of k or a dof of the
same joint, mirrored for the other triangle, zero between joints on different branches. The
full symmetric matrix is returned; rotor inertia is added on the diagonal.

The Coriolis matrix is the Christoffel-symbol factorisation
``C = sum_b J_b^T (I_b Jdot_b + B_b J_b)``
with ``B(v) = 1/2 (v x* I - I v x + (I v) x-bar)``, ``(h x-bar) u = u x* h`` (Echeandia and Wensing,
2021; the form Pinocchio's ``computeCoriolisMatrix`` implements), grouped per joint pair with the
composite quantities.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .rnea import world_spatial_inertias
from .rotations import skew
from .spatial import force_cross_matrix, motion_cross_matrix

if TYPE_CHECKING:
    from .kinematics import KinematicState
    from .model import Model


def _composite(model, per_body):
    """Sum of per-body 6x6 matrices over the subtree of each degree of freedom:
    (..., n_dof, 6, 6).
    """
    shape = per_body.shape
    flat = per_body.reshape(shape[:-2] + (36,))
    return model.subtree_sum(flat).reshape(shape[:-3] + (model.n_dof, 6, 6))


def subtree_momenta(model: Model, state: KinematicState):
    """``Ic_k S_k`` (..., n_dof, 6): per degree of freedom k, the spatial momentum (at the world
    origin, world axes) of everything it moves when it alone moves at unit rate.
    """
    Ic = _composite(model, world_spatial_inertias(state.settings, state))
    return (Ic @ state.S_world[..., None])[..., 0]


def mass_matrix(model: Model, state: KinematicState):
    """``M(q)`` (..., nv, nv), full, symmetric, rotor inertia included."""
    settings = state.settings
    S = state.S_world
    F = subtree_momenta(model, state)                     # Ic_k S_k
    P = S @ np.swapaxes(F, -1, -2)                        # P[j, k] = S_j . Ic_k S_k
    ancestor, same_joint = model.dof_ancestry()
    upper = P * ancestor
    M = upper + np.swapaxes(upper, -1, -2) - P * same_joint
    if model.has_mimic:
        G = model.mimic_matrix
        M = G.T @ M @ G
        M = 0.5 * (M + np.swapaxes(M, -1, -2))     # exactly symmetric despite rounding
    return M + np.diag(settings.rotor_inertia)


def coriolis_matrix(model: Model, state: KinematicState):
    """``C(q, qd)`` (..., nv, nv) with ``C qd + g = bias torques`` and ``Mdot - 2 C`` skew."""
    state.require('the Coriolis matrix')
    I_b = world_spatial_inertias(state.settings, state)
    V = state.V_world_body
    h = (I_b @ V[..., None])[..., 0]
    B = 0.5 * (force_cross_matrix(V) @ I_b - I_b @ motion_cross_matrix(V) + _bar(h))
    Ic = _composite(model, I_b)
    Bc = _composite(model, B)
    S, Sd = state.S_world, state.S_dot_world
    Z1 = (Ic @ S[..., None])[..., 0]
    Z2 = (np.swapaxes(Bc, -1, -2) @ S[..., None])[..., 0]
    Y = (Ic @ Sd[..., None])[..., 0] + (Bc @ S[..., None])[..., 0]
    ST = np.swapaxes(S, -1, -2)
    near = Z1 @ np.swapaxes(Sd, -1, -2) + Z2 @ ST           # j ancestor-or-self of k: [k, j]
    far = S @ np.swapaxes(Y, -1, -2)                        # k strict ancestor of j: [k, j]
    anc, same_joint = model.dof_ancestry()
    C = near * anc.T + far * (anc - same_joint)
    if model.has_mimic:
        G = model.mimic_matrix
        C = G.T @ C @ G
    return C


def _bar(h):
    """Matrix of ``u -> u x* h`` for force vectors h (..., 6): ``[[0, -[f]x], [-[f]x, -[n]x]]``."""
    out = np.zeros(h.shape[:-1] + (6, 6))
    F = skew(h[..., :3])
    out[..., :3, 3:] = -F
    out[..., 3:, :3] = -F
    out[..., 3:, 3:] = -skew(h[..., 3:])
    return out
