"""Inverse dynamics by the recursive Newton-Euler algorithm, gravity, energy, center of mass.

Formulated in world coordinates (spatial vectors at the world origin, world axes; Featherstone,
*Rigid Body Dynamics Algorithms*, 2008, and Pinocchio's world-frame variants). In that form the
forward recursion of velocities and accelerations and the backward recursion of forces are sums
along the tree, so they run as matrix products over all bodies at once (``model.path_sum``,
``model.subtree_sum``) and over any leading batch dimension:

1. ``a_b = a_0 + sum_{k on path(b)} (S_k qdd_k + S_k' qd_k)``, with ``a_0 = [-g; 0]`` (gravity as a
   fictitious upward acceleration of the base) and ``S_k' = v_k x S_k``;
2. ``f_b = I_b a_b + v_b x* (I_b v_b) - f_ext,b`` with ``I_b`` the body's inertia in world;
3. ``tau_k = S_k . sum_{b in subtree(k)} f_b``; mimic joints add ``multiplier * tau`` to their
   leader; rotor inertia adds ``I_rotor qdd``.

Every function reads the :class:`~ros_dynamics.engine.settings.DynamicSettings` the kinematic
state took from the model when it was computed (``state.settings``), so the outputs of one pass
never mix two settings.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike

from .exceptions import InvalidInputError, ShapeError
from .kinematics import as_finite_array
from .rotations import cross
from .spatial import cross_force

if TYPE_CHECKING:
    from .kinematics import KinematicState
    from .model import Model
    from .settings import DynamicSettings


def world_centers_of_mass(settings: DynamicSettings, state: KinematicState):
    """Center of mass of every body in world (..., n_bodies, 3) [m]."""
    T = state.T_world_body
    return (T[..., :3, :3] @ settings.body_com[:, :, None])[..., 0] + T[..., :3, 3]


def world_inertias(settings: DynamicSettings, state: KinematicState):
    """Per body: mass (n_bodies,), world center of mass (..., n_bodies, 3) and world rotational
    inertia about it (..., n_bodies, 3, 3), from the dynamic settings ``settings``.
    """
    R = state.T_world_body[..., :3, :3]
    inertia = R @ settings.body_inertia @ np.swapaxes(R, -1, -2)
    return settings.body_mass, world_centers_of_mass(settings, state), inertia


def world_spatial_inertias(settings: DynamicSettings, state: KinematicState):
    """6x6 spatial inertia of every body in world (..., n_bodies, 6, 6), at the world origin,
    from the dynamic settings ``settings``: ``X I_body X^T`` with ``X`` the body's force
    transform to world.
    """
    X = state.X_world_body
    return X @ settings.body_spatial_inertia @ np.swapaxes(X, -1, -2)


def body_forces(settings, state, A):
    """Net spatial forces ``I_b a_b + v_b x* I_b v_b`` (..., n_bodies, 6) on every body moving
    with the state's velocities and accelerations ``A`` (..., n_bodies, 6), in world.
    """
    V = state.V_world_body
    momenta = world_spatial_inertias(settings, state) @ np.stack([V, A], axis=-1)
    return momenta[..., 1] + cross_force(V, momenta[..., 0])


def apply_inertia(mass: ArrayLike, com: ArrayLike, inertia: ArrayLike, motion: np.ndarray):
    """Spatial inertia times a motion vector, from (mass, world com, world inertia about com):
    ``[m (v + w x c); c x m (v + w x c) + I_c w]`` (..., n_bodies, 6).
    """
    v, w = motion[..., :3], motion[..., 3:]
    linear = mass[:, None] * (v + cross(w, com))
    angular = cross(com, linear) + np.einsum('...ij,...j->...i', inertia, w)
    return np.concatenate([linear, angular], axis=-1)


def external_body_forces(model: Model, state: KinematicState, f_ext: dict | None,
                         f_ext_frame: str):
    """External wrenches as spatial forces at the world origin per body (..., n_bodies, 6)."""
    if f_ext_frame not in ('world', 'local'):
        raise InvalidInputError(f"f_ext_frame: expected 'world' or 'local', got {f_ext_frame!r}")
    out = np.zeros(state.batch_shape + (model.n_bodies, 6))
    for frame, wrench in f_ext.items():
        w = as_finite_array(wrench, f'f_ext[{frame!r}]')
        if w.shape[-1:] != (6,):
            raise ShapeError(f'f_ext[{frame!r}]: expected a wrench [force; torque] of 6 values, '
                             f'got shape {w.shape}')
        T = state.frame_pose(frame)
        force, torque = w[..., :3], w[..., 3:]
        if f_ext_frame == 'local':
            R = T[..., :3, :3]
            force = np.einsum('...ij,...j->...i', R, force)
            torque = np.einsum('...ij,...j->...i', R, torque)
        body = model.frame_body[model.frame_index(frame)]
        out[..., body, :3] += force
        out[..., body, 3:] += torque + cross(T[..., :3, 3], force)
    return out


def joint_torques(model: Model, state: KinematicState, body_forces: np.ndarray):
    """``tau`` (..., nv) of independent joints from net spatial forces on every body."""
    F = model.subtree_sum(body_forces)
    tau = np.einsum('...kj,...kj->...k', state.S_world, F)
    return model.to_independent_forces(tau)


def inverse_dynamics(model: Model, state: KinematicState, f_ext: dict | None = None,
                     f_ext_frame: str = 'world', *, friction: bool = False):
    """RNEA on a state computed with q, qd and qdd; see ``RobotModel.inverse_dynamics``."""
    state.require('inverse dynamics', accelerations=True)
    settings = state.settings
    f = body_forces(settings, state, state.A_world_body + settings.base_acceleration)
    if f_ext:
        f = f - external_body_forces(model, state, f_ext, f_ext_frame)
    tau = joint_torques(model, state, f) + settings.rotor_inertia * state.qdd
    if friction:
        tau = tau + friction_torques(settings, state.qd)
    return tau


def friction_torques(settings: DynamicSettings, qd: ArrayLike):
    """Viscous damping and Coulomb friction of the settings: ``d qd + f sign(qd)`` (..., nv)."""
    return settings.damping * qd + settings.coulomb * np.sign(qd)


def gravity_torques(model: Model, state: KinematicState):
    """``g(q)`` (..., nv) in closed form: each joint holds the weight of everything it moves.

    With ``M_k`` and ``C_k`` the mass and world first moment (sum of m c) of joint k's subtree,
    the weight of the subtree about the joint's origin ``p`` is ``[M_k g; (C_k - M_k p) x g]``,
    and joint k with motion ``[s_v; s_w]`` there (world axes) holds minus its work -- for a
    revolute joint with axis ``z``, ``z . (g x (C_k - M_k p))``; for a prismatic one,
    ``-M_k z . g``: RNEA at zero velocity and acceleration, summed once per joint. A body's
    pose times its ``[m c; m]`` gives ``[C; M]`` in world at once, and the settings'
    ``weight_map`` turns them into weights. Moments about each joint's origin, not the world's,
    keep the rounding of chains far from the origin small.
    """
    settings = state.settings
    moments = (state.T_world_body @ settings.body_mass_moment[:, :, None])[..., 0]
    moved = model.subtree_sum(moments)                        # (..., n_dof, 4): [C; M]
    moved[..., :3] -= moved[..., 3:] * state.T_world_dof[..., :3, 3]
    weights = moved @ settings.weight_map                     # (..., n_dof, 6)
    return model.to_independent_forces(-np.sum(state.motions_at_joints() * weights, axis=-1))


def bias_torques(model: Model, state: KinematicState):
    """``C(q, qd) qd + g(q)`` (..., nv) from a state computed with q and qd."""
    state.require('bias torques')
    settings = state.settings
    A = model.path_sum(state.S_dot_world * state.qd_joint[..., None]) \
        + settings.base_acceleration
    return joint_torques(model, state, body_forces(settings, state, A))


def kinetic_energy(model: Model, state: KinematicState):
    """``0.5 sum_b v_b . I_b v_b + 0.5 sum_i I_rotor,i qd_i^2`` [J]."""
    state.require('kinetic energy')
    settings = state.settings
    mass, com, inertia = world_inertias(settings, state)
    V = state.V_world_body
    h = apply_inertia(mass, com, inertia, V)
    return 0.5 * np.sum(V * h, axis=(-1, -2)) \
        + 0.5 * np.sum(settings.rotor_inertia * state.qd ** 2, axis=-1)


def moving_mass(settings: DynamicSettings):
    """Body masses (n_bodies,) with the fixed base's set to 0: the base never moves, so energy,
    total mass and center of mass count only the bodies the joints move (as Pinocchio does).
    """
    mass = np.array(settings.body_mass)
    mass[0] = 0.0
    return mass


def potential_energy(model: Model, state: KinematicState):
    """``-sum_b m_b g . c_b`` [J] over the moving bodies, zero with every center of mass at the
    world origin.
    """
    settings = state.settings
    com = world_centers_of_mass(settings, state)
    return -np.einsum('b,...bi,i->...', moving_mass(settings), com, settings.gravity)


def _moving_mass_and_com(state):
    settings = state.settings
    mass = moving_mass(settings)
    total = np.sum(mass)
    if total <= 0:
        raise InvalidInputError('center of mass: the joints move no mass')
    return mass, total, world_centers_of_mass(settings, state)


def center_of_mass(model: Model, state: KinematicState):
    """Center of mass (..., 3) of the moving bodies in the world frame [m]."""
    mass, total, com = _moving_mass_and_com(state)
    return np.einsum('b,...bi->...i', mass, com) / total


def center_of_mass_jacobian(model: Model, state: KinematicState):
    """Jacobian (..., 3, nv) of the center of mass: column k is
    ``(S_lin,k M_k + w_k x C_k) / M`` with M_k, C_k the mass and first moment moved by joint k.
    """
    mass, total, com = _moving_mass_and_com(state)
    sub_mass = model.subtree_sum(mass[:, None])                       # (n_dof, 1)
    sub_first = model.subtree_sum(mass[:, None] * com)                # (..., n_dof, 3)
    S = state.S_world
    cols = S[..., :3] * sub_mass + cross(S[..., 3:], sub_first)
    return model.to_independent_columns(np.swapaxes(cols, -1, -2)) / total
