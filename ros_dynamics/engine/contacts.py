"""Torques that hold a floating-base robot still on its contacts against gravity.

A robot standing on contacts is held by two things: its actuated joints and the contact forces.
With ``g(q)`` (nv,) the gravity torques (:func:`~ros_dynamics.engine.rnea.gravity_torques`) and
``J`` the stacked Jacobians of the contact frames (``'local_world_aligned'``: world axes, at the
frames' origins), contact wrenches ``F`` exerted *on* the robot enter inverse dynamics as
``tau = g - J^T F``. The coordinates of floating and planar joints (the base, subscript u) have no
actuator, so the contacts must carry them:

    ``J_u^T F = g_u``,      then the actuated joints hold ``tau_a = g_a - J_a^T F``.

Without friction the contacts are bilateral and ``F`` is the least-norm solution of the base's
equations (6 of them for a floating base); with a friction coefficient ``mu`` every contact force
lies in its friction cone about the vertical (opposite to gravity: flat ground), ``f_n >= 0``
and ``|f_t| <= mu f_n``, and ``F`` is the least-norm force inside the cones (SciPy's SLSQP).
``contact='point'`` contacts carry a force (3,); ``'wrench'`` contacts (a foot flat on the
ground) a force and a moment (6,), the moment unlimited (no center-of-pressure bound: the sole is
taken as large enough).

What is left of ``g_u - J_u^T F`` is the residual wrench on the base: zero (to rounding) when the
stance holds the robot; when it cannot -- too few contacts to carry a moment, the center of
mass outside the support polygon of unilateral contacts -- a :class:`StanceError` says so.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional

import numpy as np

from .exceptions import InvalidInputError, ModelError, StanceError
from .jacobians import frame_jacobian
from .rnea import center_of_mass, gravity_torques

if TYPE_CHECKING:
    from .kinematics import KinematicState
    from .model import Model

#: Residual base force (relative to the robot's weight plus 1 N) above which a stance fails.
RESIDUAL_TOLERANCE = 1e-8


@dataclass(frozen=True)
class ContactTorques:
    """Result of :func:`contact_gravity_torques` (``...`` is the batch shape of ``q``).

    torques (..., n_actuated) [N m or N]: of the model's ``actuated_joint_names``;
    forces (..., n_contacts, 3 or 6) [N, N m]: the contact force (point contacts) or wrench
    ``[force; moment]`` exerted on the robot at each contact frame's origin, in world axes;
    base_residual (..., n_base) [N, N m]: the generalized force on the floating and planar
    joints' coordinates (``v`` order) the contacts leave unbalanced, zero to rounding.
    """

    torques: np.ndarray
    forces: np.ndarray
    base_residual: np.ndarray


def contact_gravity_torques(model: Model, state: KinematicState, contact_frames: Sequence[str],
                            contact: str = 'point',
                            friction: Optional[float] = None) -> ContactTorques:
    """Actuated torques and contact forces holding the robot still at ``state.q`` on
    ``contact_frames`` (see the module docstring). Raises :class:`ModelError` for a model
    without a floating or planar joint, :class:`InvalidInputError` for bad arguments and
    :class:`StanceError` when the contacts cannot hold the robot.
    """
    base = _base_coordinates(model)
    frames, width, mu = _check(model, contact_frames, contact, friction)
    g = gravity_torques(model, state)
    J = np.concatenate([frame_jacobian(state, f)[..., :width, :] for f in frames], axis=-2)
    A = np.swapaxes(J[..., base], -1, -2)                     # (..., n_base, n_forces)
    g_base = g[..., base]
    F = (np.linalg.pinv(A) @ g_base[..., None])[..., 0]
    up = _up(state.settings.gravity)
    if mu is not None:
        F = _inside_friction_cones(A, g_base, F, mu, up, width)
    residual = g_base - (A @ F[..., None])[..., 0]
    weight = model.total_mass * float(np.linalg.norm(state.settings.gravity))
    worst = float(np.max(np.abs(residual), initial=0.0))
    if worst > RESIDUAL_TOLERANCE * (weight + 1.0):
        com = np.reshape(center_of_mass(model, state), (-1, 3))[0]
        kind = (f'unilateral {contact} contacts with friction {mu:g}' if mu is not None
                else f'{contact} contacts')
        raise StanceError(f'the {kind} at {list(frames)} cannot hold the robot: a base wrench '
                          f'of up to {worst:.3g} N or N m is left unbalanced (center of mass at '
                          f'{np.round(com, 4).tolist()} m; is it outside the support polygon, '
                          'or do the contacts carry no moment?)')
    tau = g[..., model.actuated_v_index] - (J[..., model.actuated_v_index].swapaxes(-1, -2)
                                            @ F[..., None])[..., 0]
    return ContactTorques(tau, F.reshape(F.shape[:-1] + (len(frames), width)), residual)


def _base_coordinates(model):
    """Indices in ``v`` of the coordinates of floating and planar joints."""
    base = [iv + i for _, joint, _, iv in model.multi_dof_joints for i in range(joint.nv)]
    if not base:
        raise ModelError('contact_gravity_torques: the model has a fixed base; load it with '
                         "root_joint='floating' (or 'planar') for a robot standing on contacts")
    return np.array(base)


def _check(model, contact_frames, contact, friction):
    if isinstance(contact_frames, str) or not isinstance(contact_frames, Sequence) \
            or not contact_frames:
        raise InvalidInputError(f'contact_frames: expected a non-empty list of frame names, got '
                                f'{contact_frames!r}')
    frames = [model.frame_names[model.frame_index(f)] for f in contact_frames]
    if len(set(frames)) != len(frames):
        raise InvalidInputError(f'contact_frames: a frame is named twice in {frames}')
    if contact not in ('point', 'wrench'):
        raise InvalidInputError(f"contact: expected 'point' or 'wrench', got {contact!r}")
    mu = None
    if friction is not None:
        try:
            mu = float(friction)
        except (TypeError, ValueError):
            mu = float('nan')
        if not (np.isfinite(mu) and mu > 0):
            raise InvalidInputError(f'friction: expected a coefficient > 0 (or None for '
                                    f'bilateral contacts), got {friction!r}')
    return frames, 3 if contact == 'point' else 6, mu


def _up(gravity):
    """The contact normal: opposite to gravity (z without gravity)."""
    norm = np.linalg.norm(gravity)
    return -gravity / norm if norm > 0 else np.array([0.0, 0.0, 1.0])


def _inside_friction_cones(A, g_base, F0, mu, up, width):
    """Least-norm ``F`` (..., n_forces) with ``A F = g_base`` and each contact's force
    (the first 3 of its ``width`` numbers) inside its friction cone about ``up``; the starting
    points ``F0``. States where none is found get no forces, so their residual is the whole
    load (reported by the caller).
    """
    from scipy.optimize import minimize

    batch = F0.shape[:-1]
    A2, g2, F2 = (x.reshape((-1,) + x.shape[len(batch):]) for x in (A, g_base, F0))
    out = np.empty_like(F2)
    n = F2.shape[-1] // width
    # force of contact i = F[i * width: i * width + 3]; normal part n . f, tangential part.
    pick = np.zeros((n, 3, F2.shape[-1]))
    for i in range(n):
        pick[i, :, i * width:i * width + 3] = np.eye(3)
    normal = np.einsum('j,ijk->ik', up, pick)                 # (n, n_forces)
    scale = max(float(np.max(np.abs(g2), initial=0.0)), 1.0)

    def cone(F):
        f_n = normal @ F
        f = pick @ F
        return np.concatenate([f_n, (mu * f_n) ** 2 - np.sum(f * f, axis=-1) + f_n ** 2])

    for s in range(len(F2)):
        eq = {'type': 'eq', 'fun': lambda F, s=s: (A2[s] @ F - g2[s]) / scale,
              'jac': lambda F, s=s: A2[s] / scale}
        ineq = {'type': 'ineq', 'fun': lambda F: cone(F) / scale}
        start = F2[s] + normal.T @ np.maximum(0.0, -(normal @ F2[s]))
        result = minimize(lambda F: F @ F / scale ** 2, start, jac=lambda F: 2 * F / scale ** 2,
                          constraints=[eq, ineq], method='SLSQP',
                          options={'ftol': 1e-15, 'maxiter': 500})
        F = result.x
        F = F + np.linalg.pinv(A2[s]) @ (g2[s] - A2[s] @ F)   # exact on the base's equations
        inside = np.all(cone(F) >= -1e-9 * scale ** 2 * (1 + mu * mu))
        out[s] = F if inside else 0.0
    return out.reshape(F0.shape)
