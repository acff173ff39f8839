"""Rotation parameterisations and their conversions, batched.

Every function takes a leading batch dimension ``(...)`` and returns the same leading shape.

Conventions
-----------
* Rotation matrices ``R_a_b`` map coordinates in frame b to frame a: ``p_a = R_a_b @ p_b``.
* URDF roll-pitch-yaw ``rpy = (roll, pitch, yaw)`` [rad] are fixed-axis X-Y-Z angles:
  ``R = Rz(yaw) @ Ry(pitch) @ Rx(roll)``.
* Euler ZYX angles ``(a, b, c)`` are the same rotation read as moving axes:
  ``R = Rz(a) @ Ry(b) @ Rx(c)``; Euler ZYZ ``(a, b, c)``: ``R = Rz(a) @ Ry(b) @ Rz(c)``.
* Axis-angle: a unit axis and an angle [rad], or the rotation vector ``w = angle * axis``
  (``exp_so3`` / ``log_so3``; the logarithm returns angles in ``[0, pi]``).
* Quaternions: the order is in the name. ``quat_xyzw`` is the order of ROS messages
  (x, y, z, w); ``quat_wxyz`` puts the scalar first. Returned quaternions are unit and have
  ``w >= 0``.

The inverse problems (matrix to angles) return angles that reproduce the matrix also at and near
the gimbal-lock singularities (pitch = +-pi/2 for RPY and ZYX, b = 0 or pi for ZYZ), where one
angle is free: there it is set to 0.
"""
import math

import numpy as np
from numpy.typing import ArrayLike

from .exceptions import InvalidInputError, ShapeError

_EPS = 1e-12


def as_vectors(x: ArrayLike, size: int, name: str) -> np.ndarray:
    """Return ``x`` as a float array of shape ``(..., size)`` or raise :class:`ShapeError`."""
    x = np.asarray(x, dtype=float)
    if x.ndim == 0 or x.shape[-1] != size:
        raise ShapeError(f'{name}: expected shape (..., {size}), got {x.shape}')
    return x


def as_matrices(x: ArrayLike, size: int, name: str) -> np.ndarray:
    """Return ``x`` as a float array of shape ``(..., size, size)`` or raise :class:`ShapeError`."""
    x = np.asarray(x, dtype=float)
    if x.ndim < 2 or x.shape[-2:] != (size, size):
        raise ShapeError(f'{name}: expected shape (..., {size}, {size}), got {x.shape}')
    return x


_I1 = np.array([1, 2, 0])
_I2 = np.array([2, 0, 1])


def cross(a: ArrayLike, b: ArrayLike) -> np.ndarray:
    """Cross product of 3-vectors over the last axis, broadcasting ``(..., 3)`` arrays.

    Same result as ``np.cross``, with a fraction of its overhead on small and batched arrays.
    """
    a, b = np.asarray(a), np.asarray(b)
    return a.take(_I1, -1) * b.take(_I2, -1) - a.take(_I2, -1) * b.take(_I1, -1)


def skew(v: ArrayLike) -> np.ndarray:
    """Skew-symmetric matrix ``[v]x`` with ``[v]x @ u = cross(v, u)``: (..., 3) -> (..., 3, 3)."""
    v = as_vectors(v, 3, 'v')
    out = np.zeros(v.shape + (3,))
    out[..., 0, 1] = -v[..., 2]
    out[..., 0, 2] = v[..., 1]
    out[..., 1, 0] = v[..., 2]
    out[..., 1, 2] = -v[..., 0]
    out[..., 2, 0] = -v[..., 1]
    out[..., 2, 1] = v[..., 0]
    return out


def unskew(m: ArrayLike) -> np.ndarray:
    """Vector of the skew-symmetric part of ``m`` (inverse of :func:`skew`), (..., 3)."""
    m = as_matrices(m, 3, 'm')
    return 0.5 * np.stack(
        [m[..., 2, 1] - m[..., 1, 2], m[..., 0, 2] - m[..., 2, 0], m[..., 1, 0] - m[..., 0, 1]],
        axis=-1)


def _rot_x(a):
    c, s = np.cos(a), np.sin(a)
    o, z = np.ones_like(a), np.zeros_like(a)
    return np.stack([o, z, z, z, c, -s, z, s, c], axis=-1).reshape(a.shape + (3, 3))


def _rot_y(a):
    c, s = np.cos(a), np.sin(a)
    o, z = np.ones_like(a), np.zeros_like(a)
    return np.stack([c, z, s, z, o, z, -s, z, c], axis=-1).reshape(a.shape + (3, 3))


def _rot_z(a):
    c, s = np.cos(a), np.sin(a)
    o, z = np.ones_like(a), np.zeros_like(a)
    return np.stack([c, -s, z, s, c, z, z, z, o], axis=-1).reshape(a.shape + (3, 3))


def matrix_from_rpy(rpy: ArrayLike) -> np.ndarray:
    """Rotation matrix from URDF roll-pitch-yaw [rad]: ``(..., 3) -> (..., 3, 3)``."""
    rpy = as_vectors(rpy, 3, 'rpy')
    return _rot_z(rpy[..., 2]) @ _rot_y(rpy[..., 1]) @ _rot_x(rpy[..., 0])


def rpy_from_matrix(R: ArrayLike) -> np.ndarray:
    """URDF roll-pitch-yaw [rad] of a rotation matrix: ``(..., 3, 3) -> (..., 3)``.

    pitch is in ``[-pi/2, pi/2]``; at pitch = +-pi/2 yaw is set to 0 and roll carries the rest.
    """
    R = as_matrices(R, 3, 'R')
    cp = np.hypot(R[..., 0, 0], R[..., 1, 0])
    pitch = np.arctan2(-R[..., 2, 0], cp)
    yaw = np.where(cp > _EPS, np.arctan2(R[..., 1, 0], R[..., 0, 0]), 0.0)
    # Roll from what is left once yaw and pitch are undone: exact also near gimbal lock.
    rest = np.swapaxes(_rot_z(yaw) @ _rot_y(pitch), -1, -2) @ R
    roll = np.arctan2(rest[..., 2, 1], rest[..., 1, 1])
    return np.stack([roll, pitch, yaw], axis=-1)


def matrix_from_euler_zyx(angles: ArrayLike) -> np.ndarray:
    """Rotation ``Rz(a) @ Ry(b) @ Rx(c)`` from Euler ZYX angles ``(a, b, c)`` [rad]."""
    angles = as_vectors(angles, 3, 'angles')
    return matrix_from_rpy(angles[..., ::-1])


def euler_zyx_from_matrix(R: ArrayLike) -> np.ndarray:
    """Euler ZYX angles ``(a, b, c)`` [rad] with ``R = Rz(a) @ Ry(b) @ Rx(c)``."""
    return rpy_from_matrix(R)[..., ::-1]


def matrix_from_euler_zyz(angles: ArrayLike) -> np.ndarray:
    """Rotation ``Rz(a) @ Ry(b) @ Rz(c)`` from Euler ZYZ angles ``(a, b, c)`` [rad]."""
    angles = as_vectors(angles, 3, 'angles')
    return _rot_z(angles[..., 0]) @ _rot_y(angles[..., 1]) @ _rot_z(angles[..., 2])


def euler_zyz_from_matrix(R: ArrayLike) -> np.ndarray:
    """Euler ZYZ angles ``(a, b, c)`` [rad], ``b`` in ``[0, pi]``; at b = 0 or pi, a = 0."""
    R = as_matrices(R, 3, 'R')
    sb = np.hypot(R[..., 0, 2], R[..., 1, 2])
    b = np.arctan2(sb, R[..., 2, 2])
    a = np.where(sb > _EPS, np.arctan2(R[..., 1, 2], R[..., 0, 2]), 0.0)
    rest = np.swapaxes(_rot_z(a) @ _rot_y(b), -1, -2) @ R
    c = np.arctan2(rest[..., 1, 0], rest[..., 0, 0])
    return np.stack([a, b, c], axis=-1)


def _sinc(x):
    """``sin(x) / x``, exact at 0."""
    return np.sinc(x / np.pi)


def exp_so3(w: ArrayLike) -> np.ndarray:
    """Rotation matrix (..., 3, 3) of the rotation vector ``w`` = angle * unit axis [rad]."""
    w = as_vectors(w, 3, 'w')
    theta = np.linalg.norm(w, axis=-1)[..., None, None]
    K = skew(w)
    a = _sinc(theta)                          # sin(t) / t
    b = 0.5 * _sinc(0.5 * theta) ** 2         # (1 - cos t) / t^2
    return np.eye(3) + a * K + b * (K @ K)


def log_so3(R: ArrayLike) -> np.ndarray:
    """Rotation vector (angle in ``[0, pi]`` times unit axis) of a rotation matrix.

    Accurate near 0 and near pi, where the axis is read from the symmetric part of ``R``.
    """
    R = as_matrices(R, 3, 'R')
    s = unskew(R)                              # sin(t) * axis
    c = 0.5 * (np.trace(R, axis1=-2, axis2=-1) - 1.0)
    sin_t = np.linalg.norm(s, axis=-1)
    theta = np.arctan2(sin_t, c)
    w_small = s / _sinc(theta)[..., None]
    # Near pi: (R + R^T)/2 - cos(t) I = (1 - cos t) axis axis^T; take its largest column.
    S = 0.5 * (R + np.swapaxes(R, -1, -2)) - c[..., None, None] * np.eye(3)
    k = np.argmax(np.diagonal(S, axis1=-2, axis2=-1), axis=-1)
    col = np.take_along_axis(S, k[..., None, None] * np.ones((3, 1), dtype=int), axis=-1)[..., 0]
    axis = col / np.maximum(np.linalg.norm(col, axis=-1, keepdims=True), _EPS)
    sign = np.where(np.sum(axis * s, axis=-1, keepdims=True) < 0.0, -1.0, 1.0)
    w_large = sign * axis * theta[..., None]
    return np.where((c < -0.5)[..., None], w_large, w_small)


def matrix_from_axis_angle(axis: ArrayLike, angle: ArrayLike) -> np.ndarray:
    """Rotation by ``angle`` [rad] about ``axis`` (normalised here; a zero axis is an error)."""
    axis = as_vectors(axis, 3, 'axis')
    norm = np.linalg.norm(axis, axis=-1, keepdims=True)
    if np.any(norm < _EPS):
        raise InvalidInputError('axis: expected a non-zero vector, got a zero axis')
    return exp_so3(axis / norm * np.asarray(angle, dtype=float)[..., None])


def axis_angle_from_matrix(R: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """Unit axis (..., 3) and angle (...) in ``[0, pi]`` of a rotation; axis z at angle 0."""
    w = log_so3(R)
    angle = np.linalg.norm(w, axis=-1)
    axis = np.where((angle > _EPS)[..., None], w / np.maximum(angle, _EPS)[..., None],
                    np.array([0.0, 0.0, 1.0]))
    return axis, angle


def matrix_z_to(axis: ArrayLike) -> np.ndarray:
    """A rotation ``R`` (3, 3) with ``R @ e_z = axis`` for a unit ``axis`` (3,): the shortest
    turn, or a half turn about x when ``axis`` is ``-e_z``.
    """
    axis = as_vectors(axis, 3, 'axis')
    turn = np.array([-axis[1], axis[0], 0.0])           # e_z x axis
    sin, cos = float(np.linalg.norm(turn)), float(axis[2])
    if sin < 1e-12:
        return np.eye(3) if cos > 0 else np.diag([1.0, -1.0, -1.0])
    return matrix_from_axis_angle(turn / sin, math.atan2(sin, cos))


def _quat_xyzw_from_one_matrix(R):
    """Shepperd's method on one matrix with scalar arithmetic (a fraction of the batched cost)."""
    (m00, m01, m02), (m10, m11, m12), (m20, m21, m22) = R.tolist()
    tr = m00 + m11 + m22
    k = max(range(4), key=(tr, m00, m11, m22).__getitem__)
    if k == 0:
        q = (m21 - m12, m02 - m20, m10 - m01, 1.0 + tr)
    elif k == 1:
        q = (1.0 + m00 - m11 - m22, m01 + m10, m02 + m20, m21 - m12)
    elif k == 2:
        q = (m01 + m10, 1.0 - m00 + m11 - m22, m12 + m21, m02 - m20)
    else:
        q = (m02 + m20, m12 + m21, 1.0 - m00 - m11 + m22, m10 - m01)
    norm = math.sqrt(sum(v * v for v in q))
    sign = -1.0 if q[3] < 0 else 1.0
    return np.array([sign * v / norm for v in q])


def quat_wxyz_from_xyzw(quat_xyzw: ArrayLike) -> np.ndarray:
    """Reorder a quaternion from ROS (x, y, z, w) to scalar-first (w, x, y, z)."""
    q = as_vectors(quat_xyzw, 4, 'quat_xyzw')
    return q[..., [3, 0, 1, 2]]


def quat_xyzw_from_wxyz(quat_wxyz: ArrayLike) -> np.ndarray:
    """Reorder a quaternion from scalar-first (w, x, y, z) to ROS (x, y, z, w)."""
    q = as_vectors(quat_wxyz, 4, 'quat_wxyz')
    return q[..., [1, 2, 3, 0]]


def normalize_quat(quat: ArrayLike, name: str = 'quat') -> np.ndarray:
    """Unit quaternion (any component order); raises on a zero, NaN or infinite quaternion."""
    q = as_vectors(quat, 4, name)
    if not np.all(np.isfinite(q)):
        raise InvalidInputError(f'{name}: expected finite values, got {q.tolist()}')
    norm = np.linalg.norm(q, axis=-1, keepdims=True)
    if np.any(norm < 1e-9):
        raise InvalidInputError(f'{name}: expected a non-zero quaternion, got a norm of '
                                f'{float(np.min(norm)):.3g}')
    return q / norm


def matrix_from_quat_xyzw(quat_xyzw: ArrayLike) -> np.ndarray:
    """Rotation matrix of a quaternion in ROS order (x, y, z, w); normalised first."""
    x, y, z, w = np.moveaxis(normalize_quat(quat_xyzw, 'quat_xyzw'), -1, 0)
    return np.stack([
        1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w),
        2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w),
        2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y),
    ], axis=-1).reshape(x.shape + (3, 3))


def quat_xyzw_from_matrix(R: ArrayLike) -> np.ndarray:
    """Unit quaternion (x, y, z, w) with w >= 0 of a rotation matrix (Shepperd's method)."""
    R = as_matrices(R, 3, 'R')
    if R.ndim == 2:
        return _quat_xyzw_from_one_matrix(R)
    m00, m11, m22 = R[..., 0, 0], R[..., 1, 1], R[..., 2, 2]
    tr = m00 + m11 + m22
    # Four candidate formulas; each is accurate where its pivot is largest.
    cands = np.stack([
        np.stack([R[..., 2, 1] - R[..., 1, 2], R[..., 0, 2] - R[..., 2, 0],
                  R[..., 1, 0] - R[..., 0, 1], 1 + tr], axis=-1),
        np.stack([1 + m00 - m11 - m22, R[..., 0, 1] + R[..., 1, 0],
                  R[..., 0, 2] + R[..., 2, 0], R[..., 2, 1] - R[..., 1, 2]], axis=-1),
        np.stack([R[..., 0, 1] + R[..., 1, 0], 1 - m00 + m11 - m22,
                  R[..., 1, 2] + R[..., 2, 1], R[..., 0, 2] - R[..., 2, 0]], axis=-1),
        np.stack([R[..., 0, 2] + R[..., 2, 0], R[..., 1, 2] + R[..., 2, 1],
                  1 - m00 - m11 + m22, R[..., 1, 0] - R[..., 0, 1]], axis=-1),
    ], axis=-2)
    pivots = np.stack([tr, m00, m11, m22], axis=-1)
    k = np.argmax(pivots, axis=-1)
    pick = k[..., None, None] * np.ones((1, 4), dtype=int)
    q = np.take_along_axis(cands, pick, axis=-2)[..., 0, :]
    q = q / np.linalg.norm(q, axis=-1, keepdims=True)
    return np.where(q[..., 3:4] < 0.0, -q, q)
