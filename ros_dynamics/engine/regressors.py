"""Inertial-parameter regressors: joint torques as a linear function of mass properties.

Inverse dynamics is linear in the ten inertial parameters of each body (Atkeson, An and
Hollerbach, IJRR 1986): ``tau = Y(q, v, a) @ pi``. Per body, in Pinocchio's order,

    ``pi_b = [m, m c_x, m c_y, m c_z, I_xx, I_xy, I_yy, I_xz, I_yz, I_zz]``

with ``m`` [kg] the mass, ``c`` [m] the center of mass and ``I`` [kg m^2] the rotational inertia
*about the body frame's origin* (not about the center of mass), all in the body frame's axes. A
body is what one moving joint moves: its child link and every link fixed to it, in that child
link's frame (for a URDF this is Pinocchio's joint frame); bodies come in the order of
``model.moving_joint_names`` (mimic joints included), so ``pi`` has ``10 * n_moving`` entries.
``Y`` leaves out what is not an inertial parameter: rotor inertia and joint friction.

Derivation. In a frame x fixed to a body, with the body's spatial velocity ``[v_x; w]`` and
spatial acceleration ``[a_x; w']`` (gravity included as an upward acceleration of the base)
expressed in x's axes at x's origin, the net wrench ``I a + v x* (I v)`` the body needs is
``A(v, a) @ pi_x`` with ``h = m c``:

    ``force  = m (a_x + w x v_x) + (w' x + w x w x) h``
    ``torque = (v_x x w - a_x) x h + L(w') I + w x L(w) I``

where ``L(u)`` maps ``[I_xx, I_xy, I_yy, I_xz, I_yz, I_zz]`` to ``I u``. The wrench is moved to
the world origin and projected on the motion of every joint that moves the body; a rigid payload
fixed to a frame is the same computation with x that frame (:func:`payload_regressor`).

Parameter conversions: :func:`parameters_from_inertia` / :func:`inertia_from_parameters` between
``pi`` and (mass, center of mass, inertia about the center of mass), and the pseudo-inertia
matrix ``[[S, h], [h^T, m]]`` (``S = tr(I)/2 E - I``, the second moment of the mass
distribution) whose positive semi-definiteness is physical consistency (Wensing, Kim and
Slotine, RA-L 2018): :func:`pseudo_inertia`, :func:`parameters_from_pseudo_inertia`.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional

import numpy as np

from .exceptions import InvalidInputError, ShapeError
from .kinematics import (
    KinematicState,
    as_configuration,
    as_finite_array,
    as_velocity,
    forward_kinematics,
)
from .rotations import cross, skew
from .settings import DynamicSettings
from .spatial import parallel_axis

if TYPE_CHECKING:
    from .model import Model

ArrayLike = Any

#: Names of the ten parameters of one body, in order.
PARAMETER_NAMES = ('m', 'mc_x', 'mc_y', 'mc_z', 'I_xx', 'I_xy', 'I_yy', 'I_xz', 'I_yz', 'I_zz')
# Positions of [I_xx, I_xy, I_yy, I_xz, I_yz, I_zz] in a flattened symmetric 3x3 matrix.
_INERTIA_FLAT = (0, 1, 4, 2, 5, 8)


def _inertia_map(u: np.ndarray) -> np.ndarray:
    """``L(u)`` (..., 3, 6): ``L(u) @ [I_xx, I_xy, I_yy, I_xz, I_yz, I_zz] = I @ u``."""
    x, y, z = u[..., 0], u[..., 1], u[..., 2]
    zero = np.zeros_like(x)
    return np.stack([np.stack([x, y, zero, z, zero, zero], axis=-1),
                     np.stack([zero, x, y, zero, z, zero], axis=-1),
                     np.stack([zero, zero, zero, x, y, z], axis=-1)], axis=-2)


def wrench_columns(T_world_x: np.ndarray, V_world: np.ndarray, A_world: np.ndarray) -> np.ndarray:
    """Wrench a rigid body needs for its motion, as a linear function of its parameters in x.

    ``T_world_x`` (..., 4, 4): pose of a frame x fixed to the body; ``V_world``, ``A_world``
    (..., 6): the body's spatial velocity and acceleration ``[linear; angular]`` at the world
    origin in world axes, the acceleration including gravity (``[-g; 0]`` added). Returns
    ``W`` (..., 6, 10): ``W @ pi_x`` is the wrench ``[force; torque]`` [N, N m] at the world
    origin in world axes, for ``pi_x`` the body's parameters about x's origin in x's axes.
    """
    R = T_world_x[..., :3, :3]
    p = T_world_x[..., :3, 3]
    Rt = np.swapaxes(R, -1, -2)
    w = (Rt @ V_world[..., 3:, None])[..., 0]
    v_x = (Rt @ (V_world[..., :3] + cross(V_world[..., 3:], p))[..., None])[..., 0]
    w_dot = (Rt @ A_world[..., 3:, None])[..., 0]
    a_x = (Rt @ (A_world[..., :3] + cross(A_world[..., 3:], p))[..., None])[..., 0]
    W = skew(w)
    local = np.zeros(w.shape[:-1] + (6, 10))
    local[..., :3, 0] = a_x + cross(w, v_x)
    local[..., :3, 1:4] = skew(w_dot) + W @ W
    local[..., 3:, 1:4] = skew(cross(v_x, w) - a_x)
    local[..., 3:, 4:] = _inertia_map(w_dot) + W @ _inertia_map(w)
    force = R @ local[..., :3, :]
    torque = R @ local[..., 3:, :] + skew(p) @ force
    return np.concatenate([force, torque], axis=-2)


def _needs_acceleration(state: KinematicState) -> None:
    if state.A_world_body is None:
        raise InvalidInputError('regressors need a kinematic state computed with q, v and a')


def regressor_of_state(state: KinematicState) -> np.ndarray:
    """:func:`joint_torque_regressor` from a kinematic state computed with q, v and a."""
    _needs_acceleration(state)
    model = state.model
    A = state.A_world_body[..., 1:, :] + state.settings.base_acceleration
    F = wrench_columns(state.T_world_body[..., 1:, :, :], state.V_world_body[..., 1:, :], A)
    # Y[k, b, c] = S_k . F_b[:, c] for every joint motion k that moves body b (b + 1 in the
    # model): the rows of the bodies' world Jacobians times their wrench columns.
    S = state.S_world
    Y = np.einsum('...kj,...bjc->...kbc', S, F) * model.moves_matrix()[1:].T[:, :, None]
    Y = Y.reshape(state.batch_shape + (S.shape[-2], 10 * F.shape[-3]))
    return model.mimic_matrix.T @ Y if model.has_mimic else Y


def joint_torque_regressor(model: Model, q: ArrayLike, v: ArrayLike,
                           a: ArrayLike) -> np.ndarray:
    """Joint torque regressor ``Y`` (..., nv, 10 * n_moving) at the motion (q, v, a).

    ``q`` (..., nq) [rad or m], ``v`` (..., nv) [rad/s or m/s], ``a`` (..., nv) [rad/s^2 or
    m/s^2]. ``Y @ inertial_parameters(model)`` equals ``model.inverse_dynamics(q, v, a)`` without
    rotor inertia and friction (see the module docstring for the parameters; gravity from the
    model's settings). Equals Pinocchio's ``computeJointTorqueRegressor``.
    """
    return regressor_of_state(_motion_state(model, q, v, a))


def payload_regressor_of_state(state: KinematicState, frame: str | int) -> np.ndarray:
    """:func:`payload_regressor` from a kinematic state computed with q, v and a."""
    _needs_acceleration(state)
    model = state.model
    f = model.frame_index(frame)
    b = model.frame_body[f]
    A = state.A_world_body[..., b, :] + state.settings.base_acceleration
    F = wrench_columns(state.frame_pose(f), state.V_world_body[..., b, :], A)
    Y = (state.S_world * model.dof_mask(b)[:, None]) @ F
    return model.mimic_matrix.T @ Y if model.has_mimic else Y


def payload_regressor(model: Model, frame: str | int, q: ArrayLike, v: ArrayLike,
                      a: ArrayLike) -> np.ndarray:
    """Regressor ``Y_p`` (..., nv, 10) of a rigid payload fixed to ``frame`` (name or index).

    ``Y_p @ pi_p`` are the joint torques [N m or N] the payload adds at the motion (q, v, a)
    (shapes as in :func:`joint_torque_regressor`), with ``pi_p`` its ten parameters in the
    frame's axes about the frame's origin (:func:`parameters_from_inertia`). Zero for a frame
    on the fixed base.
    """
    return payload_regressor_of_state(_motion_state(model, q, v, a), frame)


def _motion_state(model, q, v, a) -> KinematicState:
    """Kinematics of (q, v, a), each argument checked under its own name."""
    q = as_configuration(model, q, 'q')
    v = as_velocity(model, v, 'v', q.shape[:-1])
    a = as_velocity(model, a, 'a', q.shape[:-1])
    return forward_kinematics(model, q, v, a, check=False)


# --- parameter conversions ----------------------------------------------------------------


def parameters_from_inertia(mass: ArrayLike, com: ArrayLike, inertia_com: ArrayLike) -> np.ndarray:
    """Parameters ``pi`` (..., 10) of bodies from mass (...,) [kg], center of mass (..., 3)
    [m] and rotational inertia about the center of mass (..., 3, 3) [kg m^2], all in one frame.
    """
    mass = as_finite_array(mass, 'mass')
    com = as_finite_array(com, 'com')
    inertia_com = as_finite_array(inertia_com, 'inertia_com')
    _check_shape(com, (3,), 'com')
    _check_shape(inertia_com, (3, 3), 'inertia_com')
    inertia_origin = inertia_com + parallel_axis(mass, com)
    flat = inertia_origin.reshape(inertia_origin.shape[:-2] + (9,))[..., _INERTIA_FLAT]
    batch = np.broadcast_shapes(mass.shape, com.shape[:-1], flat.shape[:-1])
    return np.concatenate([np.broadcast_to(mass[..., None], batch + (1,)),
                           np.broadcast_to(mass[..., None] * com, batch + (3,)),
                           np.broadcast_to(flat, batch + (6,))], axis=-1)


def inertia_from_parameters(pi: ArrayLike) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(mass (...,) [kg], com (..., 3) [m], inertia about the com (..., 3, 3) [kg m^2])`` of
    parameters ``pi`` (..., 10); the center of mass of a massless body is the origin.
    """
    pi = as_finite_array(pi, 'pi')
    _check_shape(pi, (10,), 'pi')
    mass = pi[..., 0]
    safe = np.where(mass != 0, mass, 1.0)
    com = np.where((mass != 0)[..., None], pi[..., 1:4] / safe[..., None], 0.0)
    inertia_origin = _symmetric(pi[..., 4:])
    inertia = inertia_origin - parallel_axis(mass, com)
    return mass, com, 0.5 * (inertia + np.swapaxes(inertia, -1, -2))


def _symmetric(six: np.ndarray) -> np.ndarray:
    """3x3 symmetric matrices (..., 3, 3) from ``[xx, xy, yy, xz, yz, zz]`` (..., 6)."""
    xx, xy, yy, xz, yz, zz = np.moveaxis(six, -1, 0)
    return np.stack([np.stack([xx, xy, xz], -1), np.stack([xy, yy, yz], -1),
                     np.stack([xz, yz, zz], -1)], -2)


def pseudo_inertia(pi: ArrayLike) -> np.ndarray:
    """Pseudo-inertia ``J = [[S, h], [h^T, m]]`` (..., 4, 4) of parameters ``pi`` (..., 10):
    ``S = tr(I)/2 E - I`` [kg m^2] the second moment of the mass about the origin, ``h = m c``.
    The parameters are those of a physical body (mass >= 0, inertia about the center of mass
    positive semi-definite and obeying the triangle inequality) exactly when ``J`` is positive
    semi-definite.
    """
    pi = as_finite_array(pi, 'pi')
    _check_shape(pi, (10,), 'pi')
    inertia = _symmetric(pi[..., 4:])
    trace = np.trace(inertia, axis1=-2, axis2=-1)
    J = np.zeros(pi.shape[:-1] + (4, 4))
    J[..., :3, :3] = 0.5 * trace[..., None, None] * np.eye(3) - inertia
    J[..., :3, 3] = J[..., 3, :3] = pi[..., 1:4]
    J[..., 3, 3] = pi[..., 0]
    return J


def parameters_from_pseudo_inertia(J: ArrayLike, *, check: bool = True) -> np.ndarray:
    """Parameters ``pi`` (..., 10) of a pseudo-inertia (..., 4, 4) (see :func:`pseudo_inertia`):
    ``I = tr(S) E - S``. ``check=False`` skips the input checks (an optimiser's inner loop).
    """
    if check:
        J = as_finite_array(J, 'J')
        _check_shape(J, (4, 4), 'J')
    S = 0.5 * (J[..., :3, :3] + np.swapaxes(J[..., :3, :3], -1, -2))
    inertia = np.trace(S, axis1=-2, axis2=-1)[..., None, None] * np.eye(3) - S
    flat = inertia.reshape(inertia.shape[:-2] + (9,))[..., _INERTIA_FLAT]
    first = 0.5 * (J[..., :3, 3] + J[..., 3, :3])
    return np.concatenate([J[..., 3, 3:], first, flat], axis=-1)


def inertial_parameters(model: Model,
                        settings: Optional[DynamicSettings] = None) -> np.ndarray:
    """Parameters ``pi`` (10 * n_moving,) of every moving body, payloads included, from the
    model's current dynamic settings (or ``settings`` made for it); see the module docstring.
    """
    s = model.settings if settings is None else settings
    return parameters_from_inertia(s.body_mass[1:], s.body_com[1:], s.body_inertia[1:]).reshape(-1)


def _check_shape(x: np.ndarray, tail: tuple, name: str) -> None:
    if x.shape[x.ndim - len(tail):] != tail or x.ndim < len(tail):
        raise ShapeError(f'{name}: expected shape (..., {", ".join(map(str, tail))}), got '
                         f'{x.shape}')
