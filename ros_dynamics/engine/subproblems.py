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
import cmath
import math

import numpy as np
from scipy.linalg.lapack import zgeev as _zgeev

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


def sp6(H, K, P, d):
    """Subproblem 6: the angle pairs ``theta1, theta2`` (each (..., 4)) with
    ``H[0]^T rot(K[0], theta1) P[0] + H[1]^T rot(K[1], theta2) P[1] = d[0]`` and
    ``H[2]^T rot(K[0], theta1) P[2] + H[3]^T rot(K[1], theta2) P[3] = d[1]``, and ``exact``
    (..., 4): whether each pair solves them. ``H`` (4, 3), ``K`` (2, 3) unit vectors; ``P``
    (..., 4, 3); ``d`` (..., 2).

    Each term is ``c cos(theta) + s sin(theta) + const``, so the two equations are linear in
    the unit vectors ``u = (cos theta1, sin theta1)`` and ``v = (cos theta2, sin theta2)``:
    ``A u + B v = r``. The better conditioned of ``A`` and ``B`` is inverted -- say ``B``:
    ``v = B^-1 (r - A u)`` -- and ``|v| = 1`` is a trigonometric quadratic in ``theta1``,
    a quartic in ``z = exp(i theta1)`` whose four roots (eigenvalues of its companion matrix)
    lie on the unit circle where they are real solutions (Elias and Wen solve the same
    equations as an intersection of two ellipses). Roots off the circle (no exact solution)
    give the nearest angles, not exact; the angles are as accurate as the roots (about 1e-10
    rad from a well-separated root): callers polish them on the true chain.
    """
    P = np.asarray(P, dtype=float)
    k = K[[0, 1, 0, 1]]                                  # the axis each term turns about
    kp, hk = _dot(k, P), np.sum(H * k, axis=-1)
    cos, sin = _dot(H, P) - kp * hk, _dot(H, cross(k, P))          # (..., 4)
    A = np.stack([cos[..., 0::2], sin[..., 0::2]], axis=-1)        # (..., 2, 2) rows: eqs
    B = np.stack([cos[..., 1::2], sin[..., 1::2]], axis=-1)
    r = np.asarray(d, dtype=float) - (kp * hk)[..., 0::2] - (kp * hk)[..., 1::2]
    det_a, det_b = _det2(A), _det2(B)
    swap = np.abs(det_a) > np.abs(det_b)                 # invert A: solve for theta2 first
    E = np.where(swap[..., None, None], B, A)            # the kept block, its angle's row
    F = np.where(swap[..., None, None], A, B)
    det = np.where(swap, det_a, det_b)
    G = np.stack([np.stack([F[..., 1, 1], -F[..., 0, 1]], -1),
                  np.stack([-F[..., 1, 0], F[..., 0, 0]], -1)], -2) / det[..., None, None]
    a = (G @ r[..., None])[..., 0]                       # w = a - C t for t = (cos, sin)
    C = G @ E
    S = np.swapaxes(C, -1, -2) @ C
    g = (np.swapaxes(C, -1, -2) @ a[..., None])[..., 0]
    # |w|^2 - 1 = S00 c^2 + 2 S01 c s + S11 s^2 - 2 g . (c, s) + |a|^2 - 1, as a polynomial
    # in z: C2 z^4 + C1 z^3 + C0 z^2 + conj(C1) z + conj(C2).
    c2 = 0.25 * (S[..., 0, 0] - S[..., 1, 1]) - 0.5j * S[..., 0, 1]
    c1 = -g[..., 0] + 1j * g[..., 1]
    c0 = 0.5 * (S[..., 0, 0] + S[..., 1, 1]) + _dot(a, a) - 1.0
    scale = np.maximum(np.maximum(np.abs(c2), np.abs(c1)), np.abs(c0))
    quartic = np.abs(c2) > _ISOTROPIC * scale
    lead = np.where(quartic, c2, 1.0)
    companion = np.zeros(c2.shape + (4, 4), dtype=complex)
    companion[..., 0, :] = -np.stack([c1, c0, np.conj(c1), np.conj(c2)], -1) / lead[..., None]
    companion[..., [1, 2, 3], [0, 1, 2]] = 1.0
    z = np.linalg.eigvals(companion)
    t = np.angle(z)
    exact = np.abs(np.abs(z) - 1.0) <= _ON_CIRCLE
    if not quartic.all():
        # S isotropic (C2 = 0): (S00 + |a|^2 - 1) - 2 g . (c, s) = 0, two angles (as sp4).
        rho, phi = np.hypot(g[..., 0], g[..., 1]), np.arctan2(g[..., 1], g[..., 0])
        ratio = np.divide(0.5 * (S[..., 0, 0] + _dot(a, a) - 1.0), rho,
                          out=np.full(rho.shape, 2.0), where=rho > 0)
        half = np.arccos(np.clip(ratio, -1.0, 1.0))
        two = np.stack([phi + half, phi - half, phi + half, phi - half], axis=-1)
        t = np.where(quartic[..., None], t, two)
        exact = np.where(quartic[..., None], exact, (np.abs(ratio) <= 1.0 + _TANGENT)[..., None])
    w = a[..., None, :] - np.einsum('...ij,...kj->...ki', C, np.stack([np.cos(t), np.sin(t)], -1))
    other = np.arctan2(w[..., 1], w[..., 0])
    theta1, theta2 = np.where(swap[..., None], other, t), np.where(swap[..., None], t, other)
    return _wrap(theta1), _wrap(theta2), exact


#: sp6: a root of the quartic this close to the unit circle is a real solution (a double root,
#: at a tangency, lands about the square root of the rounding off it).
_ON_CIRCLE = 1e-6
#: sp6: a leading coefficient this small against the others makes the quartic a quadratic.
_ISOTROPIC = 1e-12


def _det2(M):
    return M[..., 0, 0] * M[..., 1, 1] - M[..., 0, 1] * M[..., 1, 0]


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
    return (wrap_one(phi + half), wrap_one(phi - half)), exact


def sp3_one(p, q, k, d):
    """:func:`sp3` for one problem (3-tuples)."""
    return sp4_one(q, p, k, 0.5 * (dot3(p, p) + dot3(q, q) - d * d))


def sp2_one(p, q, k1, k2):
    """:func:`sp2` for one problem (3-tuples): ``((theta1, theta2), (theta1, theta2)),
    exact``.
    """
    theta1, exact = sp4_one(k2, p, k1, dot3(k2, q))
    return tuple((t, sp1_one(q, rotate3(k1, t, p), k2)) for t in theta1), exact


def sp6_one(H, K, P, d):
    """:func:`sp6` for one problem (``H``, ``K``, ``P``: tuples of 3-tuples; ``d``: two floats):
    four ``(theta1, theta2, exact)``.
    """
    cos, sin, const = [], [], []
    for i in range(4):
        (hx, hy, hz), (kx, ky, kz), (px, py, pz) = H[i], K[i % 2], P[i]
        kp, hk = kx * px + ky * py + kz * pz, hx * kx + hy * ky + hz * kz
        cos.append(hx * px + hy * py + hz * pz - kp * hk)
        sin.append(hx * (ky * pz - kz * py) + hy * (kz * px - kx * pz) + hz * (kx * py - ky * px))
        const.append(kp * hk)
    r0, r1 = d[0] - const[0] - const[1], d[1] - const[2] - const[3]
    det_a = cos[0] * sin[2] - sin[0] * cos[2]
    det_b = cos[1] * sin[3] - sin[1] * cos[3]
    swap = abs(det_a) > abs(det_b)             # invert A: solve for theta2 first
    e, f = (1, 0) if swap else (0, 1)          # the kept block's terms, the inverted one's
    det = det_a if swap else det_b
    # G = F^-1; w = a - C t for the kept angle's t = (cos, sin).
    g00, g01, g10, g11 = sin[f + 2] / det, -sin[f] / det, -cos[f + 2] / det, cos[f] / det
    a0, a1 = g00 * r0 + g01 * r1, g10 * r0 + g11 * r1
    c00, c01 = g00 * cos[e] + g01 * cos[e + 2], g00 * sin[e] + g01 * sin[e + 2]
    c10, c11 = g10 * cos[e] + g11 * cos[e + 2], g10 * sin[e] + g11 * sin[e + 2]
    s00, s01, s11 = c00 * c00 + c10 * c10, c00 * c01 + c10 * c11, c01 * c01 + c11 * c11
    gg0, gg1 = c00 * a0 + c10 * a1, c01 * a0 + c11 * a1
    q2 = complex(0.25 * (s00 - s11), -0.5 * s01)
    q1 = complex(-gg0, gg1)
    q0 = 0.5 * (s00 + s11) + a0 * a0 + a1 * a1 - 1.0
    if abs(q2) > _ISOTROPIC * max(abs(q2), abs(q1), abs(q0)):
        companion = np.array([[-q1 / q2, -q0 / q2, -q1.conjugate() / q2, -q2.conjugate() / q2],
                              *_SHIFT], dtype=complex)
        # LAPACK's eigenvalues directly: NumPy's eigvals wraps the same routine in checks
        # that cost as much as it does, for a 4x4 of finite values.
        roots, _, _, info = _zgeev(companion, compute_vl=0, compute_vr=0)
        if info:
            roots = np.linalg.eigvals(companion)
        angles = [(cmath.phase(z), abs(abs(z) - 1.0) <= _ON_CIRCLE) for z in roots.tolist()]
    else:                                      # S isotropic: two angles (as sp4)
        rho, phi = math.hypot(gg0, gg1), math.atan2(gg1, gg0)
        ratio = 0.5 * (s00 + a0 * a0 + a1 * a1 - 1.0) / rho if rho > 0.0 else 2.0
        half = math.acos(min(1.0, max(-1.0, ratio)))
        exact = abs(ratio) <= 1.0 + _TANGENT
        angles = [(phi + half, exact), (phi - half, exact)] * 2
    out = []
    for t, exact in angles:
        c, s = math.cos(t), math.sin(t)
        other = math.atan2(a1 - c10 * c - c11 * s, a0 - c00 * c - c01 * s)
        t = wrap_one(t)
        out.append((other, t, exact) if swap else (t, other, exact))
    return out


#: The rows of a 4x4 companion matrix below its first.
_SHIFT = ((1.0, 0.0, 0.0, 0.0), (0.0, 1.0, 0.0, 0.0), (0.0, 0.0, 1.0, 0.0))


def wrap_one(theta):
    """An angle moved into [-pi, pi) (a float)."""
    return (theta + math.pi) % (2.0 * math.pi) - math.pi
