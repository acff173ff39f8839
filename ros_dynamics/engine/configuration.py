"""The configuration space of a model: named and default configurations, sampling, and moving
on it (Pinocchio's ``neutral``, ``randomConfiguration``, ``integrate``, ``difference``).

``q`` has ``model.nq`` values and velocities ``model.nv``; they coincide but for floating and
planar joints, whose coordinates each :class:`~ros_dynamics.engine.joints.JointModel` handles
(unit quaternions and (cos, sin) pairs, the exponential map). The model offers each function as a
method (:mod:`~ros_dynamics.engine.entry_points`).
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Optional

import numpy as np
from numpy.typing import ArrayLike

from . import kinematics
from .exceptions import ShapeError, UnknownJointError

if TYPE_CHECKING:
    from .model import Model


def q_from_names(model: Model, names: Sequence[str], positions: ArrayLike,
                 default: Optional[ArrayLike] = None, *,
                 ignore_unknown: bool = False) -> np.ndarray:
    """``q`` (nq,) from (name, position) pairs merged onto ``default`` (:func:`neutral`
    if None); names are those of ``model.q_names`` (the joints' for one-DOF joints).

    Names of mimic joints are accepted and ignored (they follow their leader). Unknown
    names raise :class:`UnknownJointError` unless ``ignore_unknown``.
    """
    names = list(names)
    positions = kinematics.as_finite_array(positions, 'positions').reshape(-1)
    if len(names) != positions.size:
        raise ShapeError(f'names and positions: expected equal lengths, got {len(names)} '
                         f'names and {positions.size} positions')
    q = neutral(model) if default is None else \
        kinematics.as_configuration(model, default, 'default').copy()
    for name, value in zip(names, positions):
        i = model.q_name_index.get(name)
        if i is not None:
            q[i] = value
        elif name not in model.moving_index and not ignore_unknown:
            raise UnknownJointError(name, model.q_names)
    return q

def joint_state_from_q(model: Model, q: ArrayLike) -> tuple[list[str], list[float]]:
    """``(names, positions)`` of the ``model.actuated_joint_names`` for one ``q`` (nq,)."""
    q = kinematics.as_configuration(model, q, 'q')
    if q.ndim != 1:
        raise ShapeError(f'q: expected one configuration of shape ({model.nq},), got {q.shape}')
    return list(model.actuated_joint_names), q[model.actuated_q_index].tolist()

def middle_configuration(model: Model) -> np.ndarray:
    """Middle of the joint limits (nq,); 0 for unbounded joints, :func:`neutral` for
    floating and planar joints.
    """
    finite = np.isfinite(model.lower_limits) & np.isfinite(model.upper_limits)
    q = np.where(finite, 0.5 * (np.where(finite, model.lower_limits, 0)
                                + np.where(finite, model.upper_limits, 0)), 0.0)
    return _with_multi_dof(model, q, lambda joint: joint.neutral())

def neutral(model: Model) -> np.ndarray:
    """The configuration (nq,) of the description's pose: every one-DOF joint at zero,
    floating and planar joints at the identity (Pinocchio's ``neutral``).
    """
    return _with_multi_dof(model, np.zeros(model.nq), lambda joint: joint.neutral())

def random_configuration(model: Model, rng: object = None,
                         size: Optional[int] = None) -> np.ndarray:
    """Configurations (nq,) -- or (size, nq) -- drawn uniformly inside the limits (one
    turn for unbounded joints); floating and planar joints: translations in +-1 m, the
    orientation uniform. ``rng``: a seed or ``numpy.random.Generator``.
    """
    rng = np.random.default_rng(rng)
    shape = () if size is None else (int(size),)
    q = rng.uniform(model.sampling_lower, model.sampling_upper, size=shape + (model.nq,))
    return _with_multi_dof(model, q, lambda joint, lo, hi: joint.random(rng, lo, hi, shape),
                                bounds=True)

def _with_multi_dof(model, q, value, bounds=False):
    """``q`` with the coordinates of each multi-DOF joint set to ``value(joint)`` (or
    ``value(joint, lower, upper)`` with its sampling bounds).
    """
    for _, joint, start, _ in model.multi_dof_joints:
        part = slice(start, start + joint.nq)
        q[..., part] = value(joint, model.sampling_lower[part], model.sampling_upper[part]) \
            if bounds else value(joint)
    return q

def integrate(model: Model, q: ArrayLike, v: ArrayLike, dt: float = 1.0) -> np.ndarray:
    """The configuration (..., nq) reached from ``q`` (..., nq) moving at ``v`` (..., nv)
    for ``dt`` [s]: ``q + v dt`` for one-DOF joints, the exponential map for floating
    (SE(3), ``v`` in the body's axes) and planar (SE(2)) joints, as Pinocchio's
    ``integrate``. Quaternions of ``q`` are normalised first.
    """
    q = kinematics.as_configuration(model, q, 'q')
    vdt = kinematics.as_velocity(model, v, 'v', q.shape[:-1]) * float(dt)
    if not model.has_multi_dof:
        return q + vdt
    out = np.array(q)
    out[..., model.actuated_q_index] += vdt[..., model.actuated_v_index]
    for _, joint, iq, iv in model.multi_dof_joints:
        out[..., iq:iq + joint.nq] = joint.integrate(q[..., iq:iq + joint.nq],
                                                     vdt[..., iv:iv + joint.nv])
    return out

def difference(model: Model, q0: ArrayLike, q1: ArrayLike) -> np.ndarray:
    """The velocity (..., nv) that moves ``q0`` to ``q1`` in unit time (the inverse of
    :func:`integrate`: the logarithm for floating and planar joints, angles of a turn or
    less for them).
    """
    q0 = kinematics.as_configuration(model, q0, 'q0')
    q1 = kinematics.as_configuration(model, q1, 'q1')
    try:
        q0, q1 = np.broadcast_arrays(q0, q1)
    except ValueError:
        raise ShapeError(f"q1: batch shape {q1.shape[:-1]} does not match q0's "
                         f'{q0.shape[:-1]}') from None
    if not model.has_multi_dof:
        return q1 - q0
    v = np.empty(q0.shape[:-1] + (model.nv,))
    v[..., model.actuated_v_index] = (q1 - q0)[..., model.actuated_q_index]
    for _, joint, iq, iv in model.multi_dof_joints:
        v[..., iv:iv + joint.nv] = joint.difference(q0[..., iq:iq + joint.nq],
                                                    q1[..., iq:iq + joint.nq])
    return v
