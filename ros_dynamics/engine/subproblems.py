"""The Paden-Kahan subproblems of inverse kinematics, batched: the angles of rotations about
known axes that move known vectors into known relations.

Every inverse kinematics in :mod:`~ros_dynamics.engine.ik_analytic` is a sequence of these.
The forms and names follow the subproblem-decomposition literature -- B. Paden, *Kinematics and
control of robot manipulators*, PhD thesis, UC Berkeley, 1986; R. Murray, Z. Li and S. Sastry,
*A Mathematical Introduction to Robotic Manipulation*, 1994, section 3.3; A. Elias and J. Wen,
*IK-Geo: Unified robot inverse kinematics using subproblem decomposition*, Mechanism and
Machine Theory 2024 -- and, as in the last, each is solved in the least-squares sense when it
has no exact solution (a target just out of reach, a rounded model): the returned angles then
minimise the residual and ``exact`` is False.

Conventions: ``k``, ``k1``, ``k2``, ``h`` are unit axes; ``rot(k, theta)`` rotates by ``theta``
[rad] about ``k`` (right hand); vectors are ``(..., 3)`` arrays and every leading dimension is a
batch (one pose, a path of poses, the branches of a solve). Subproblems with two solutions
return them in a trailing axis of size 2; where there is one (tangency, least squares) it
appears twice. The ``*_one`` forms solve one problem in Python floats (3-tuples), for a
single pose, where NumPy's fixed cost per call would dominate.
"""
import math

import numpy as np

from .rotations import cross, skew

_I3 = np.eye(3)
#: |residual| below which a two-solution subproblem counts as exactly solved (a tangency):
#: at a straight elbow rounding alone reaches 1e-12, and the answer's pose is checked anyway.
_TANGENT = 1e-9


def rot(k, theta):
    """Rotation matrices ``rot(k, theta)`` (..., 3, 3) about unit axes ``k`` (..., 3) by
    ``theta`` (...) [rad]: the exponential of the rotation vector ``theta k``.
    """
    theta = np.asarray(theta, dtype=float)[..., None, None]
    K = skew(np.asarray(k, dtype=float))
    # Rodrigues' formula, I + sin K + (1 - cos) K^2: for one axis K is a constant 3x3, and
    # the batch costs three elementwise products.
    return _I3 + np.sin(theta) * K + (1.0 - np.cos(theta)) * (K @ K)


def rotate(k, theta, v):
    """``rot(k, theta) v`` (..., 3) for one unit axis ``k`` (3,), angles ``theta`` (...) [rad]
    and vectors ``v`` (..., 3), broadcast: Rodrigues' formula on the vectors,
    ``v + sin K v + (1 - cos) K K v`` with ``K v = k x v``, without forming the matrices.
    """
    kx, ky, kz = k.tolist()
    Kt = np.array([[0.0, kz, -ky], [-kz, 0.0, kx], [ky, -kx, 0.0]])     # K^T: v @ Kt = k x v
    theta = np.asarray(theta, dtype=float)[..., None]
    v = np.asarray(v, dtype=float)
    flat = v.reshape(-1, 3)                     # one (n, 3) x (3, 3) product, not n of (1, 3)
    Kv = flat @ Kt
    KKv = (Kv @ Kt).reshape(v.shape)
    return v + np.sin(theta) * Kv.reshape(v.shape) + (1.0 - np.cos(theta)) * KKv


def _dot(a, b):
    return np.einsum('...i,...i->...', a, b)


def sp1(p, q, k):
    """Subproblem 1: ``theta`` (...) with ``rot(k, theta) p = q``, or the angle that brings
    ``p`` closest to ``q``. Arbitrary (0) when ``p`` or ``q`` lies on the axis.
    """
    kp = _dot(k, p)[..., None]
    return np.arctan2(_dot(k, cross(p, q)), _dot(q, p - kp * k))


def sp4(h, p, k, d):
    """Subproblem 4: the angles ``theta`` (..., 2) with ``h^T rot(k, theta) p = d`` and
    ``exact`` (...): whether they solve it (else the one angle nearest to it, twice).
    """
    hk, kp = _dot(h, k), _dot(k, p)
    a = _dot(cross(h, k), p)                     # the sine's, h . (k x p) = (h x k) . p
    b = _dot(h, p) - hk * kp                     # the cosine's
    c = np.asarray(d, dtype=float) - hk * kp     # a sin + b cos = c
    r = np.hypot(a, b)
    phi = np.arctan2(a, b)
    ratio = np.divide(c, r, out=np.full(np.shape(c * r), 2.0), where=r > 0)
    exact = np.abs(ratio) <= 1.0 + _TANGENT
    half = np.arccos(np.clip(ratio, -1.0, 1.0))
    theta = np.stack([phi + half, phi - half], axis=-1)
    return _wrap(theta), exact


def sp3(p, q, k, d):
    """Subproblem 3: the angles ``theta`` (..., 2) with ``|rot(k, theta) p - q| = d`` and
    ``exact`` (...), as :func:`sp4` (to which it reduces: ``q^T rot(k, theta) p`` is fixed by
    the distance).
    """
    d = np.asarray(d, dtype=float)
    return sp4(q, p, k, 0.5 * (_dot(p, p) + _dot(q, q) - d * d))


def sp2(p, q, k1, k2):
    """Subproblem 2: the angle pairs ``theta1, theta2`` (each (..., 2)) with
    ``rot(k1, theta1) p = rot(k2, theta2) q`` and ``exact`` (...). ``p`` and ``q`` should have
    the same length; ``k1`` and ``k2`` (3,) must not be parallel.

    ``k2^T rot(k1, theta1) p = k2^T q`` fixes ``theta1`` (:func:`sp4`), and then ``theta2``
    turns ``q`` onto ``rot(k1, theta1) p`` (:func:`sp1`).
    """
    theta1, exact = sp4(k2, p, k1, _dot(k2, q))
    theta2 = sp1(q[..., None, :], rotate(k1, theta1, p[..., None, :]), k2)
    return theta1, theta2, exact


def _wrap(theta):
    """Angles moved into [-pi, pi)."""
    return (theta + np.pi) % (2.0 * np.pi) - np.pi


# --- one problem at a time, in Python floats ----------------------------------------------------
# The same subproblems for 3-tuples of floats: for a single pose, where the NumPy calls' fixed
# cost (a microsecond each) would dominate.

def dot3(a, b):
    """``a . b`` (3-tuples)."""
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


def rotate3(k, theta, v):
    """``rot(k, theta) v`` for a unit axis ``k`` and a vector ``v`` (3-tuples)."""
    return rotate_cs(k, math.cos(theta), math.sin(theta), v)


def rotate_cs(k, c, s, v):
    """``rot(k, theta) v`` given ``c = cos(theta)`` and ``s = sin(theta)``."""
    kv = (k[0] * v[0] + k[1] * v[1] + k[2] * v[2]) * (1.0 - c)
    return (v[0] * c + (k[1] * v[2] - k[2] * v[1]) * s + k[0] * kv,
            v[1] * c + (k[2] * v[0] - k[0] * v[2]) * s + k[1] * kv,
            v[2] * c + (k[0] * v[1] - k[1] * v[0]) * s + k[2] * kv)


def sp1_one(p, q, k):
    """:func:`sp1` for one problem (3-tuples): the angle."""
    px, py, pz = p
    qx, qy, qz = q
    kx, ky, kz = k
    kp = kx * px + ky * py + kz * pz
    kq = kx * qx + ky * qy + kz * qz
    return math.atan2(kx * (py * qz - pz * qy) + ky * (pz * qx - px * qz)
                      + kz * (px * qy - py * qx), qx * px + qy * py + qz * pz - kp * kq)


def sp4_one(h, p, k, d):
    """:func:`sp4` for one problem (3-tuples): ``(theta_a, theta_b), exact``."""
    hx, hy, hz = h
    px, py, pz = p
    kx, ky, kz = k
    hk = hx * kx + hy * ky + hz * kz
    kp = kx * px + ky * py + kz * pz
    a = hx * (ky * pz - kz * py) + hy * (kz * px - kx * pz) + hz * (kx * py - ky * px)
    b = hx * px + hy * py + hz * pz - hk * kp
    c = d - hk * kp
    r = math.hypot(a, b)
    phi = math.atan2(a, b)
    ratio = c / r if r > 0.0 else 2.0
    exact = abs(ratio) <= 1.0 + _TANGENT
    half = math.acos(min(1.0, max(-1.0, ratio)))
    return (_wrap_one(phi + half), _wrap_one(phi - half)), exact


def sp3_one(p, q, k, d):
    """:func:`sp3` for one problem (3-tuples)."""
    return sp4_one(q, p, k, 0.5 * (dot3(p, p) + dot3(q, q) - d * d))


def sp2_one(p, q, k1, k2):
    """:func:`sp2` for one problem (3-tuples): ``((theta1, theta2), (theta1, theta2)),
    exact``.
    """
    theta1, exact = sp4_one(k2, p, k1, dot3(k2, q))
    return tuple((t, sp1_one(q, rotate3(k1, t, p), k2)) for t in theta1), exact


def _wrap_one(theta):
    return (theta + math.pi) % (2.0 * math.pi) - math.pi
