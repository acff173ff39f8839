"""Rigid transforms, twists, wrenches and spatial inertia, batched.

The one 6-vector order of the whole engine is ``[linear; angular]``:

* a motion vector (twist, spatial velocity or acceleration) is ``[v; w]``: the linear velocity
  [m/s] of the body point at the reference point, then the angular velocity [rad/s];
* a force vector (wrench) is ``[f; n]``: force [N], then moment [N m] about the reference point.

``T_a_b`` (shape ``(..., 4, 4)``) is the pose of frame b in frame a, ``p_a = T_a_b @ p_b``, and
letters chain: ``T_a_c = T_a_b @ T_b_c``. ``adjoint(T_a_b)`` maps a motion vector expressed in b
(at b's origin) to the same motion expressed in a (at a's origin).
"""

import numpy as np
from numpy.typing import ArrayLike

from .rotations import (
    _sinc,
    as_matrices,
    as_vectors,
    cross,
    exp_so3,
    log_so3,
    matrix_from_rpy,
    skew,
)


def transform(R: ArrayLike, p: ArrayLike) -> np.ndarray:
    """Homogeneous transform from a rotation ``(..., 3, 3)`` and a translation ``(..., 3)``."""
    R = as_matrices(R, 3, 'R')
    p = as_vectors(p, 3, 'p')
    shape = np.broadcast_shapes(R.shape[:-2], p.shape[:-1])
    T = np.zeros(shape + (4, 4))
    T[..., :3, :3] = R
    T[..., :3, 3] = p
    T[..., 3, 3] = 1.0
    return T


def transform_from_xyz_rpy(xyz: ArrayLike, rpy: ArrayLike) -> np.ndarray:
    """Transform of a URDF ``<origin xyz=... rpy=...>`` [m, rad]."""
    return transform(matrix_from_rpy(rpy), xyz)


def inverse_transform(T: ArrayLike) -> np.ndarray:
    """``T_b_a`` from ``T_a_b``: ``(..., 4, 4) -> (..., 4, 4)``."""
    T = as_matrices(T, 4, 'T')
    Rt = np.swapaxes(T[..., :3, :3], -1, -2)
    return transform(Rt, -(Rt @ T[..., :3, 3:4])[..., 0])


def exp_se3(xi: ArrayLike) -> np.ndarray:
    """Transform reached by following the twist ``xi = [v; w]`` for unit time.

    (..., 6) -> (..., 4, 4).
    """
    xi = as_vectors(xi, 6, 'xi')
    v, w = xi[..., :3], xi[..., 3:]
    theta = np.linalg.norm(w, axis=-1)[..., None, None]
    K = skew(w)
    b = 0.5 * _sinc(0.5 * theta) ** 2                       # (1 - cos t) / t^2
    c = _one_minus_sinc_over_t2(theta)                      # (t - sin t) / t^3
    V = np.eye(3) + b * K + c * (K @ K)
    return transform(exp_so3(w), (V @ v[..., None])[..., 0])


def log_se3(T: ArrayLike) -> np.ndarray:
    """Twist ``[v; w]`` whose :func:`exp_se3` is ``T`` (rotation angle in ``[0, pi]``)."""
    T = as_matrices(T, 4, 'T')
    w = log_so3(T[..., :3, :3])
    theta = np.linalg.norm(w, axis=-1)[..., None, None]
    K = skew(w)
    a = _sinc(theta)
    b = 0.5 * _sinc(0.5 * theta) ** 2
    small = theta < 1e-4
    safe = np.where(small, 1.0, theta)
    d = np.where(small, 1.0 / 12.0 + theta ** 2 / 720.0,
                 (1.0 - a / (2.0 * np.where(small, 1.0, b))) / safe ** 2)
    V_inv = np.eye(3) - 0.5 * K + d * (K @ K)
    return np.concatenate([(V_inv @ T[..., :3, 3:4])[..., 0], w], axis=-1)


def _one_minus_sinc_over_t2(theta):
    """``(t - sin t) / t^3``, with its series near 0."""
    small = theta < 1e-3
    t = np.where(small, 1.0, theta)
    return np.where(small, 1.0 / 6.0 - theta ** 2 / 120.0, (t - np.sin(t)) / t ** 3)


def adjoint(T_a_b: ArrayLike) -> np.ndarray:
    """Adjoint ``(..., 6, 6)`` mapping motion vectors in b to motion vectors in a.

    ``[[R, [p]x R], [0, R]]`` for ``T_a_b = (R, p)`` in the ``[linear; angular]`` order. Its
    inverse transpose maps force vectors from a to b.
    """
    T_a_b = as_matrices(T_a_b, 4, 'T_a_b')
    R, p = T_a_b[..., :3, :3], T_a_b[..., :3, 3]
    out = np.zeros(T_a_b.shape[:-2] + (6, 6))
    out[..., :3, :3] = R
    out[..., :3, 3:] = skew(p) @ R
    out[..., 3:, 3:] = R
    return out


def _cross_matrix_map():
    """(6, 36): ``v @ map`` is the flattened matrix of ``m -> v x m``,
    ``[[[w]x, [v]x], [0, [w]x]]`` for ``v = [v; w]``.
    """
    out = np.zeros((6, 6, 6))
    for i, e in enumerate(np.eye(3)):
        E = skew(e)
        out[3 + i, :3, :3] = out[3 + i, 3:, 3:] = E
        out[i, :3, 3:] = E
    out.setflags(write=False)
    return out.reshape(6, 36)


_CRM_MAP = _cross_matrix_map()
#: ``v @ _CRF_MAP``: the flattened matrix of ``f -> v x* f``, ``-crm(v)^T``.
_CRF_MAP = -_CRM_MAP.reshape(6, 6, 6).transpose(0, 2, 1).reshape(6, 36)


def cross_motion(v: ArrayLike, m: ArrayLike) -> np.ndarray:
    """Motion cross product ``v x m`` of motion vectors ``(..., 6)``: the rate of change of ``m``
    when it moves with velocity ``v``.
    """
    m = as_vectors(m, 6, 'm')
    return (motion_cross_matrix(v) @ m[..., None])[..., 0]


def cross_force(v: ArrayLike, f: ArrayLike) -> np.ndarray:
    """Force cross product ``v x* f`` of a motion vector and a force vector ``(..., 6)``."""
    f = as_vectors(f, 6, 'f')
    return (force_cross_matrix(v) @ f[..., None])[..., 0]


def motion_cross_matrix(v: ArrayLike) -> np.ndarray:
    """Matrix ``(..., 6, 6)`` of ``m -> v x m`` (Featherstone's ``crm``)."""
    v = as_vectors(v, 6, 'v')
    return (v @ _CRM_MAP).reshape(v.shape[:-1] + (6, 6))


def force_cross_matrix(v: ArrayLike) -> np.ndarray:
    """Matrix ``(..., 6, 6)`` of ``f -> v x* f`` (Featherstone's ``crf = -crm^T``)."""
    v = as_vectors(v, 6, 'v')
    return (v @ _CRF_MAP).reshape(v.shape[:-1] + (6, 6))


def spatial_inertia(mass: ArrayLike, com: ArrayLike, inertia_com: ArrayLike) -> np.ndarray:
    """6x6 spatial inertia about a frame's origin from mass [kg], center of mass ``com`` [m] and
    rotational inertia about the center of mass ``inertia_com`` [kg m^2], all in that frame.

    ``[[m E, -m [c]x], [m [c]x, I_c - m [c]x [c]x]]`` in the ``[linear; angular]`` order, so that
    the momentum of a body with spatial velocity ``v`` is ``spatial_inertia(...) @ v``.
    """
    mass = np.asarray(mass, dtype=float)
    com = as_vectors(com, 3, 'com')
    inertia_com = as_matrices(inertia_com, 3, 'inertia_com')
    C = skew(com)
    m = mass[..., None, None]
    shape = np.broadcast_shapes(mass.shape, com.shape[:-1], inertia_com.shape[:-2])
    out = np.zeros(shape + (6, 6))
    out[..., :3, :3] = m * np.eye(3)
    out[..., :3, 3:] = -m * C
    out[..., 3:, :3] = m * C
    out[..., 3:, 3:] = inertia_com - m * (C @ C)
    return out


def transform_wrench(T_a_b: ArrayLike, wrench_b: ArrayLike) -> np.ndarray:
    """Wrench ``[f; n]`` given in frame b (moment about b's origin) expressed in frame a (moment
    about a's origin): ``(..., 4, 4), (..., 6) -> (..., 6)``.
    """
    T_a_b = as_matrices(T_a_b, 4, 'T_a_b')
    wrench_b = as_vectors(wrench_b, 6, 'wrench_b')
    R, p = T_a_b[..., :3, :3], T_a_b[..., :3, 3]
    f = (R @ wrench_b[..., :3, None])[..., 0]
    n = (R @ wrench_b[..., 3:, None])[..., 0] + cross(p, f)
    return np.concatenate([f, n], axis=-1)


def parallel_axis(mass: ArrayLike, offset: ArrayLike) -> np.ndarray:
    """Steiner term ``m (|c|^2 E - c c^T)`` (..., 3, 3): the inertia a point mass ``mass`` [kg]
    at ``offset`` (..., 3) [m] adds about the origin.
    """
    mass = np.asarray(mass, dtype=float)
    offset = np.asarray(offset, dtype=float)
    sq = np.sum(offset * offset, axis=-1)
    return mass[..., None, None] * (sq[..., None, None] * np.eye(3)
                                    - offset[..., :, None] * offset[..., None, :])


def lump_inertias(mass: ArrayLike, com: ArrayLike,
                  inertia_com: ArrayLike) -> tuple[float, np.ndarray, np.ndarray]:
    """Mass properties of a rigid union of parts given in one frame.

    ``mass`` (k,) [kg], ``com`` (k, 3) [m] and ``inertia_com`` (k, 3, 3) [kg m^2] (about each
    part's center of mass) -> the union's mass, center of mass (3,) (the origin when massless)
    and inertia (3, 3) about it, exactly symmetric.
    """
    mass = np.asarray(mass, dtype=float)
    com = np.asarray(com, dtype=float).reshape(-1, 3)
    total = float(np.sum(mass))
    about_origin = np.sum(np.asarray(inertia_com, dtype=float).reshape(-1, 3, 3)
                          + parallel_axis(mass, com), axis=0)
    center = mass @ com / total if total > 0 else np.zeros(3)
    inertia = about_origin - parallel_axis(total, center)
    return total, center, 0.5 * (inertia + inertia.T)
