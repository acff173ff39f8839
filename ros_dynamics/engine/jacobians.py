"""Frame Jacobians in the three conventions, their time derivatives and frame motion.

``J`` (..., 6, nv) maps joint velocities to a frame's motion 6-vector ``[linear; angular]``:
``'world'`` gives the spatial velocity (at the world origin, world axes),
``'local_world_aligned'`` the velocity of the frame origin (or of a point fixed in the frame) and
the angular velocity, in world axes, and ``'local'`` the same in the frame's axes
(see :mod:`ros_dynamics.engine.kinematics`). Columns of mimic joints' leaders collect the mimic
joints' motion times their multipliers.

:func:`jacobian_time_derivative` is the exact time derivative of the matrix in the chosen
convention, so ``d/dt (J qd) = J qdd + Jdot qd``: with ``'local_world_aligned'`` that is the
classical acceleration ``[p''; w']``, with ``'local'`` and ``'world'`` the spatial acceleration in
those axes.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike

from .exceptions import InvalidInputError
from .kinematics import check_convention
from .rotations import cross, skew

if TYPE_CHECKING:
    from .kinematics import KinematicState


def _lwa_from_world(J_world, p):
    """Shift spatial columns from the world origin to the point p: v_p = v_O - p x w."""
    linear = J_world[..., :3, :] - skew(p) @ J_world[..., 3:, :]
    return np.concatenate([linear, J_world[..., 3:, :]], axis=-2)


def _rotate_rows(R_T, J):
    """Express both halves of 6-row blocks in other axes: ``R_T`` (..., 3, 3) applied to each."""
    return np.concatenate([R_T @ J[..., :3, :], R_T @ J[..., 3:, :]], axis=-2)


def frame_jacobian(state: KinematicState, frame: str | int,
                   expressed_in: str = 'local_world_aligned', point: ArrayLike | None = None):
    """Geometric Jacobian (..., 6, nv) of ``frame`` (or of ``point`` fixed in it, frame coords).

    Column of degree of freedom k with spatial motion ``S_k = [s_v; s_w]`` (world, at the world
    origin) for the point p: ``[s_v + s_w x p; s_w]`` in ``local_world_aligned`` (``[z_k x (p -
    p_k); z_k]`` for a revolute joint, ``[z_k; 0]`` for a prismatic one); rotated into the frame
    for ``local``; ``S_k`` itself for ``world``; zero for joints that do not move the frame.
    """
    check_convention(expressed_in)
    m = state.model
    f = m.frame_index(frame)
    moves = m.dof_mask(m.frame_body[f])[:, None]
    if expressed_in == 'world':
        return m.to_independent_columns(np.swapaxes(state.S_world * moves, -1, -2))
    T, p = state.point_motion(f, point)[:2]
    cols = state.motions_about(p) * moves                   # (..., n_dof, 6), world axes
    if expressed_in == 'local':                             # both halves: x -> R^T x
        cols = (cols.reshape(cols.shape[:-1] + (2, 3)) @ T[..., None, :3, :3]).reshape(cols.shape)
    return m.to_independent_columns(np.swapaxes(cols, -1, -2))


def jacobian_time_derivative(state: KinematicState, frame: str | int,
                             expressed_in: str = 'local_world_aligned',
                             point: ArrayLike | None = None):
    """Time derivative (..., 6, nv) of :func:`frame_jacobian` along (q, qd); state needs qd."""
    check_convention(expressed_in)
    state.require('jacobian_time_derivative')
    m = state.model
    f = m.frame_index(frame)
    b = m.frame_body[f]
    moves = m.dof_mask(b)[:, None]
    J = np.swapaxes(state.S_world * moves, -1, -2)
    Jdot = np.swapaxes(state.S_dot_world * moves, -1, -2)
    if expressed_in != 'world':
        T, p, v_p, w = state.point_motion(f, point)[:4]
        J_lwa = _lwa_from_world(J, p)
        # d/dt [[E, -[p]x], [0, E]] = [[0, -[p']x], [0, 0]]
        Jdot = _lwa_from_world(Jdot, p)
        Jdot[..., :3, :] -= skew(v_p) @ J[..., 3:, :]
        if expressed_in == 'local':
            R_T = np.swapaxes(T[..., :3, :3], -1, -2)
            # d/dt R^T = -R^T [w]x
            W = skew(w)
            Jdot = _rotate_rows(R_T, Jdot - np.concatenate(
                [W @ J_lwa[..., :3, :], W @ J_lwa[..., 3:, :]], axis=-2))
    return m.to_independent_columns(Jdot)


def frame_velocity(state: KinematicState, frame: str | int,
                   expressed_in: str = 'local_world_aligned', point: ArrayLike | None = None):
    """Twist (..., 6) of a frame in the chosen convention; state needs qd."""
    check_convention(expressed_in)
    state.require('frame_velocity')
    if expressed_in == 'world':
        return state.V_world_body[..., state.model.frame_body[state.model.frame_index(frame)],
                                  :].copy()
    T, p, v_p, w = state.point_motion(frame, point)[:4]
    if expressed_in == 'local':
        R_T = np.swapaxes(T[..., :3, :3], -1, -2)
        v_p, w = (R_T @ v_p[..., None])[..., 0], (R_T @ w[..., None])[..., 0]
    return np.concatenate([v_p, w], axis=-1)


def frame_acceleration(state: KinematicState, frame: str | int,
                       expressed_in: str = 'local_world_aligned', point: ArrayLike | None = None,
                       kind: str = 'classical'):
    """Acceleration (..., 6) of a frame; state needs qd and qdd.

    ``kind='classical'``: the linear part is the second derivative of the point's position
    (``'world'``: of the body point at the world origin); ``kind='spatial'``: the derivative of
    the spatial velocity in that convention (Pinocchio's ``getFrameAcceleration``).
    """
    check_convention(expressed_in)
    state.require('frame_acceleration', accelerations=True)
    if kind not in ('classical', 'spatial'):
        raise InvalidInputError(f"kind: expected 'classical' or 'spatial', got {kind!r}")
    m = state.model
    f = m.frame_index(frame)
    T, p, v_p, w, a_p, w_dot = state.point_motion(f, point)
    if expressed_in == 'world':
        V = state.V_world_body[..., m.frame_body[f], :]
        A = state.A_world_body[..., m.frame_body[f], :].copy()
        if kind == 'classical':
            A[..., :3] += cross(V[..., 3:], V[..., :3])
        return A
    if kind == 'spatial':
        a_p = a_p - cross(w, v_p)
    if expressed_in == 'local':
        R_T = np.swapaxes(T[..., :3, :3], -1, -2)
        a_p, w_dot = (R_T @ a_p[..., None])[..., 0], (R_T @ w_dot[..., None])[..., 0]
    return np.concatenate([a_p, w_dot], axis=-1)
