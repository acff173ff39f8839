"""Analytic inverse kinematics of six revolute joints: every solution of a pose, by subproblem
decomposition, for the arm geometries that allow it.

A chain of six revolute joints is read at its zero configuration (the joints the caller holds
fixed at their given values) as the product of exponentials: axes ``h_i`` (6, 3) through points
``o_i`` (6, 3) and the tip's pose ``R0, p0`` in the chain's root frame, so that
``R(q) = rot(h_1, q_1) ... rot(h_6, q_6) R0`` and the tip's position follows from the points.
:func:`classify` recognises, within a tolerance (rounded and calibrated descriptions are never
exact), the families whose inverse kinematics splits into the subproblems of
:mod:`~ros_dynamics.engine.subproblems` -- following the classification of A. Elias and J. Wen,
*IK-Geo: Unified robot inverse kinematics using subproblem decomposition*, Mechanism and
Machine Theory 2024, and of D. Ostermeier et al., *Automatic geometric decomposition for
analytical inverse kinematics* (EAIK), IEEE RA-L 2025:

* ``three_parallel`` -- axes 2, 3 and 4 parallel and axes 5 and 6 meeting (UR, Z1 arms): up
  to 8 solutions;
* ``three_parallel_offset`` -- axes 2, 3 and 4 parallel, axes 5 and 6 apart (SO-100's jaw;
  Alexander's legs read from the foot): angles 1 and 5 from subproblem 6, a quartic, then up to
  8 solutions;
* ``spherical_wrist`` -- axes 4, 5 and 6 meeting at one point, with axes 2 and 3 parallel
  (PUMA, Jaco, most industrial arms), axes 1 and 2 meeting, or axes 2 and 3 meeting (Romeo's
  arm on its trunk, to the wrist's first joint): up to 8 solutions;
* the same families for the chain read backwards, tip to root (a spherical shoulder).

Geometries whose subproblem 3 about axis 3 is degenerate are none of these (:func:`_isolated`):
their solutions form a continuum.

Where the description only nearly fits (within :data:`ANGLE_TOLERANCE` and
:data:`DISTANCE_TOLERANCE`) the geometry is snapped to the family, solved, and every solution
then polished by Gauss-Newton steps on the true chain (:func:`polish`); so are the solutions of
``three_parallel_offset``, whose quartic's roots are numerical. Chains that fit no
family are left to the numerical solver (:mod:`~ros_dynamics.engine.ik_search`).
"""
from dataclasses import dataclass, replace
from functools import cached_property
import math
from typing import Optional

import numpy as np

from .ik_chain import LIMIT_SLACK
from .ik_search import PoseError, pose_error
from .rotations import cross
from .subproblems import (
    dot3,
    rot,
    rotate,
    rotate3,
    rotate_cs,
    sp1,
    sp1_one,
    sp2,
    sp2_one,
    sp3,
    sp3_one,
    sp4,
    sp4_one,
    sp6,
    sp6_one,
    wrap_one,
)

#: Axes whose directions differ by less than this [rad] count as parallel.
ANGLE_TOLERANCE = 2e-3
#: Axes closer than this [m] count as meeting.
DISTANCE_TOLERANCE = 2e-3
#: Axes 4 and 6 within this angle [rad] count as aligned: the wrist singularity.
SINGULAR_ANGLE = 1e-6
#: A wrist centre this near axis 1 [m] is on it: the shoulder singularity.
SINGULAR_DISTANCE = 1e-6
#: Gauss-Newton steps of :func:`polish` at most.
POLISH_STEPS = 6
#: [m or rad] A branch whose pose is off by more than this (its largest error component) is
#: not polished: a least-squares branch of a target out of reach, not one a snapping moved.
POLISH_NEAR = 0.1

_I3 = np.eye(3)


@dataclass(frozen=True)
class Geometry:
    """Six revolute joints at their zero configuration, in the chain's root frame: unit axes
    ``h`` (6, 3), points ``o`` (6, 3) on them, and the tip's pose ``R0`` (3, 3), ``p0`` (3,).
    ``reversed``: this is the chain read tip to root (angles negated, order reversed).
    """

    h: np.ndarray
    o: np.ndarray
    R0: np.ndarray
    p0: np.ndarray
    reversed: bool = False

    def backwards(self) -> 'Geometry':
        """The chain read from the tip: ``T_tip_root(q) = T_root_tip(q)^-1`` is a chain of the
        same axes in reverse order, in the tip's zero frame, turned by ``-q``.
        """
        Rt = self.R0.T
        h, o = self.h @ self.R0, (self.o - self.p0) @ self.R0
        return Geometry(h[::-1].copy(), o[::-1].copy(), Rt, -Rt @ self.p0, not self.reversed)


def geometry(chain, x_fixed, active) -> Optional[Geometry]:
    """The :class:`Geometry` of ``chain`` (:class:`~ros_dynamics.engine.ik_chain.Chain`) with
    its joints ``x_fixed`` (m,) where ``active`` (m, bool) is False (turning or sliding) and
    zero where True, or None unless six revolute joints are active and no mimic joint couples
    the chain's joints.
    """
    if chain.mimic or np.count_nonzero(active) != 6 or not np.all(
            (chain.angular[active, 0] == 1.0) & (chain.linear[active, 0] == 0.0)):
        return None
    x = np.where(active, 0.0, x_fixed)[None]
    T, tip = chain._frames(x)
    frames = T[0, active]
    return Geometry(frames[:, :3, 2].copy(), frames[:, :3, 3].copy(), tip[0, :3, :3].copy(),
                    tip[0, :3, 3].copy())


def _meet(h, o, i, j):
    """The point where axes i and j meet (3,), or None (parallel or apart)."""
    n = cross(h[i], h[j])
    s = np.linalg.norm(n)
    if s < ANGLE_TOLERANCE:
        return None
    d = o[j] - o[i]
    if abs(d @ n) / s > DISTANCE_TOLERANCE:
        return None
    # Closest points o_i + a h_i and o_j + b h_j; their midpoint.
    hh = h[i] @ h[j]
    a = (d @ h[i] - hh * (d @ h[j])) / (1.0 - hh * hh)
    b = (hh * (d @ h[i]) - d @ h[j]) / (1.0 - hh * hh)
    return 0.5 * (o[i] + a * h[i] + o[j] + b * h[j])


def _parallel(h, i, j):
    return np.linalg.norm(cross(h[i], h[j])) < ANGLE_TOLERANCE


@dataclass(frozen=True)
class Family:
    """A recognised geometry: its ``name``, the (snapped) :class:`Geometry` the solver uses,
    whether snapping changed it (``snapped``), for the spherical wrist which shoulder case
    applies (``shoulder``: 'parallel', 'meeting' -- axes 1 and 2 -- or 'second' -- axes 2
    and 3), ``drift`` [m] and ``tilt`` [rad]: how far apart the true and the snapped chain put
    the tip at most, in position and in orientation, at any configuration (:func:`_drift`), and
    ``snap``: the largest angle [rad] snapping turned an axis by, or distance [m] it moved an
    axis's line across itself.
    """

    name: str
    geometry: Geometry
    snapped: bool
    shoulder: str = ''
    drift: float = 0.0
    snap: float = 0.0
    tilt: float = 0.0

    @property
    def turned(self):
        """Whether snapping turned an axis by more than rounding (:attr:`tilt` above 1e-12
        rad): its solutions then move along a singularity's near-continuum, and held joints
        after the six move the tip by a lever :attr:`drift` leaves out.
        """
        return self.tilt > 1e-12

    @property
    def approximate(self):
        """Whether the solutions need :func:`polish` and a check on the true chain -- the
        geometry was snapped, or the family's roots are numerical (subproblem 6) -- and none
        within the tolerances does not prove the target out of reach.
        """
        return self.snapped or self.name == 'three_parallel_offset'

    @cached_property
    def _vectors(self):
        """The geometry as 3-tuples of floats for :meth:`solve_one`."""
        g = self.geometry
        h = [tuple(v) for v in g.h.tolist()]
        o = g.o
        diffs = [tuple(v) for v in (np.diff(o, axis=0)).tolist()]
        return {'h': h, 'p01': tuple(o[0].tolist()), 'p': diffs,
                'p6T': tuple((g.p0 - o[5]).tolist()), 'R0T': g.R0.T.copy(),
                # the wrist centre's offset from the tip, in the tip's frame: R0^T (p0 - o6)
                'w0': tuple((g.R0.T @ (g.p0 - o[5])).tolist()),
                'w2': tuple(_perpendicular(g.h[1]).tolist()),
                'w6': tuple(_perpendicular(g.h[5]).tolist()),
                # axes 3 and 4 along (+1) or against (-1) axis 2 (three parallel axes)
                's34': tuple(math.copysign(1.0, float(g.h[1] @ g.h[k])) for k in (2, 3)),
                # Rodrigues' terms of rot(h1, .) h2 and rot(h5, .) h2 (three_parallel_offset)
                'h1h2': (tuple(cross(g.h[0], g.h[1]).tolist()), float(g.h[0] @ g.h[1])),
                'h5h2': (tuple(cross(g.h[4], g.h[1]).tolist()), float(g.h[4] @ g.h[1]))}

    def solve_one(self, R, p, exact_only=False, limits=None, near=None):
        """:meth:`solve` for one pose, in Python floats (a few times faster for one pose):
        eight ``(q, exact)``, ``q`` a 6-tuple -- with ``exact_only``, only the exact ones (the
        branches whose arm is out of reach are not carried through the wrist). For
        ``three_parallel_offset``, the pairs of angles 1 and 5 that no pose gives (roots of
        subproblem 6 off the unit circle) are always left out: up to eight. With ``limits``,
        ``(lower, upper, turning)`` of each joint root first (as
        :attr:`~ros_dynamics.engine.ik_chain.Chain.float_limits`, widened by any slack; None
        for a joint every angle fits), so are the branches with an angle that fits no whole
        turn inside them, as soon as that angle is known (what is not computed costs nothing)
        -- except, where joint 5 is at the wrist singularity (:meth:`any_singular`), the
        angles the continuum there moves. There, with ``near`` (six angles root first: the
        seed's), each branch's point of the continuum is the one nearest ``near`` in angles 4
        and 6 (:func:`_along_continuum`), instead of the subproblems' arbitrary one.
        """
        if self.geometry.reversed:
            R, p = R.T, -R.T.dot(p)
            if limits is not None:               # joint i is joint 7 - i, its angle negated
                limits = [limit and (-limit[1], -limit[0], limit[2]) for limit in limits[::-1]]
            if near is not None:
                near = tuple(-x for x in near[::-1])
        v = self._vectors
        R06 = R.dot(v['R0T']).tolist()
        out = _SOLVERS_ONE[self.name](v, R06, tuple(p.tolist()), self.shoulder, exact_only,
                                      limits or _OPEN, self._singular_q5, near)
        if self.geometry.reversed:
            out = [(tuple(-x for x in q[::-1]), exact) for q, exact in out]
        return out

    @cached_property
    def _singular_q5(self):
        """The angle of joint 5 (of the chain the subproblems solve) turning axis 6 onto axis
        4, or None when no angle does (axes 4 and 6 then never meet the singularity).
        """
        h4, h5, h6 = self.geometry.h[3:]
        q5 = float(sp1(h6, h4, h5))
        aligned = abs(dot3(rotate3(tuple(h5), q5, tuple(h6)), tuple(h4)))
        return q5 if aligned > 1.0 - 0.5 * SINGULAR_ANGLE ** 2 else None

    def singular(self, X):
        """Which configurations of ``X`` (..., 6) (root first) put the wrist at its singularity
        (:meth:`any_singular`): (...) bool.
        """
        q5 = self._singular_q5
        if q5 is None:
            return np.zeros(X.shape[:-1], dtype=bool)
        k, sign = (1, -1.0) if self.geometry.reversed else (4, 1.0)
        d = (sign * X[..., k] - q5) % math.pi
        return (d < SINGULAR_ANGLE) | (d > math.pi - SINGULAR_ANGLE)

    def any_singular(self, qs):
        """Whether any of the six angles in ``qs`` (each root first) puts the wrist at its
        singularity: joint 5 turning axis 6 onto axis 4 or its opposite (within
        :data:`SINGULAR_ANGLE`), where only a combination of joints 4 and 6 is fixed by the
        pose and the solutions form a continuum -- in either family, read forwards or
        backwards. :meth:`singular` in Python floats, for a few configurations.
        """
        return self.singular_distance(qs) < SINGULAR_ANGLE

    def singular_distance(self, qs):
        """The least angle [rad] of joint 5 in ``qs`` (six angles each, root first) from the
        wrist singularity (:meth:`any_singular`); infinity for a wrist that has none.
        """
        q5 = self._singular_q5
        if q5 is None:
            return math.inf
        k, sign = (1, -1.0) if self.geometry.reversed else (4, 1.0)   # read backwards: -q2
        least = math.inf
        for q in qs:                                  # as _at_singularity (every solve asks)
            d = (sign * q[k] - q5) % math.pi
            least = min(least, d, math.pi - d)
        return least

    def shoulder_singular(self, T):
        """Whether the tip pose ``T`` (4, 4) in the root frame puts the point the first three
        joints place -- the wrist centre, where axes 5 and 6 meet for three parallel axes --
        on axis 1 (within :data:`SINGULAR_DISTANCE`; read backwards, on axis 6): angle 1 then
        turns it about itself, and the solutions form a continuum, of which the subproblems
        give an arbitrary point. Not for subproblem 6's family, whose axes 5 and 6 do not meet.
        In Python floats (a few microseconds: every one-pose answer asks).
        """
        if self.name == 'three_parallel_offset':
            return False
        (a, b, c, x), (d, e, f, y), (g, h, i, z), _ = T.tolist()
        if self.geometry.reversed:             # R^T, -R^T p
            a, b, c, d, e, f, g, h, i, x, y, z = (
                a, d, g, b, e, h, c, f, i,
                -(a * x + d * y + g * z), -(b * x + e * y + h * z), -(c * x + f * y + i * z))
        v = self._vectors
        wx, wy, wz = v['w0']
        ox, oy, oz = v['p01']
        x -= a * wx + b * wy + c * wz + ox
        y -= d * wx + e * wy + f * wz + oy
        z -= g * wx + h * wy + i * wz + oz
        kx, ky, kz = v['h'][0]
        n = (ky * z - kz * y, kz * x - kx * z, kx * y - ky * x)
        return dot3(n, n) < SINGULAR_DISTANCE ** 2

    def solve(self, R, p):
        """Joint angles (N, 8, 6) of the chain (root first) for tip poses ``R`` (N, 3, 3),
        ``p`` (N, 3) in the root frame, and whether each subproblem was solved exactly
        (N, 8): least-squares branches (targets out of reach) are approximate, and branches
        no pose gives are NaN (``three_parallel_offset``: roots of subproblem 6 off the unit
        circle).
        """
        g = self.geometry
        if g.reversed:
            R, p = np.swapaxes(R, -1, -2), -np.einsum('nji,nj->ni', R, p)
        Q, exact = _SOLVERS[self.name](g, R, p, self.shoulder)
        if g.reversed:
            Q = -Q[..., ::-1]
        return Q, exact


def classify(g: Geometry) -> Optional[Family]:
    """The :class:`Family` of ``g`` read forwards, else backwards, else None."""
    for geo in (g, g.backwards()):
        family = _classify_one(geo)
        if family is not None:
            return family
    return None


def _classify_one(g):
    h, o = g.h, g.o
    if _parallel(h, 1, 2) and _parallel(h, 2, 3) and not _parallel(h, 0, 1) \
            and not _parallel(h, 3, 4) and not _parallel(h, 4, 5) \
            and _isolated(h[2], o[3] - o[2], o[2] - o[1]):
        c = _meet(h, o, 4, 5)
        if c is not None:
            h2 = _aligned(h[1], h[1:4])
            new = replace(g, h=np.concatenate([h[:1], h2, h[4:]]),
                          o=np.concatenate([o[:4], [c, c]]))
            return _family('three_parallel', new, g)
        new = replace(g, h=np.concatenate([h[:1], _aligned(h[1], h[1:4]), h[4:]]))
        return _family('three_parallel_offset', new, g)
    c45, c56 = _meet(h, o, 3, 4), _meet(h, o, 4, 5)
    if c45 is None or c56 is None or np.linalg.norm(c45 - c56) > DISTANCE_TOLERANCE:
        return None
    c = 0.5 * (c45 + c56)
    o = np.concatenate([o[:3], [c, c, c]])
    if _parallel(h, 1, 2) and not _parallel(h, 0, 1) and _isolated(h[2], c - o[2], o[2] - o[1]):
        new = replace(g, h=np.concatenate([h[:1], _aligned(h[1], h[1:3]), h[3:]]), o=o)
        return _family('spherical_wrist', new, g, 'parallel')
    c12 = _meet(h, o, 0, 1)
    if c12 is not None and not _parallel(h, 1, 2) and _isolated(h[2], c - o[2], o[2] - c12):
        new = replace(g, o=np.concatenate([[c12, c12], o[2:]]))
        return _family('spherical_wrist', new, g, 'meeting')
    c23 = _meet(h, o, 1, 2)
    if c23 is not None and _isolated(h[0], c23 - o[0]) and _isolated(h[2], c - c23):
        new = replace(g, o=np.concatenate([o[:1], [c23, c23], o[3:]]))
        return _family('spherical_wrist', new, g, 'second')
    return None


def _isolated(k, *vectors):
    """Whether subproblem 3 (or 2) about an axis along ``k`` (3,) has isolated solutions: the
    ``vectors`` (each (3,)) from a point on the axis -- the next point the arm places, the
    previous joint's -- off the axis by more than :data:`DISTANCE_TOLERANCE`. Otherwise a turn
    about it does not change their distance, and the solutions form a continuum of which the
    subproblems would give a few points only: two axes meeting or parallel on the same line
    (coincident), or a spherical shoulder -- axes 1, 2 and 3 meeting, as on a humanoid's waist
    below its arm -- with a spherical wrist.
    """
    return min(np.linalg.norm(cross(k, v)) for v in vectors) > DISTANCE_TOLERANCE


def _aligned(h, axes):
    """``axes`` (k, 3) replaced by ``h`` with each one's sign."""
    return np.sign(axes @ h)[:, None] * h


def _family(name, new, g, shoulder=''):
    """The :class:`Family` ``name`` of the geometry ``g`` snapped to ``new``."""
    moved = np.linalg.norm(cross(new.h, new.o - g.o), axis=1)   # (6,) off each axis's line
    turned = not np.allclose(g.h, new.h, rtol=0, atol=1e-12)
    turn = float(np.arcsin(np.clip(np.linalg.norm(cross(g.h, new.h), axis=1), 0.0, 1.0)).max())
    drift, tilt = _drift(g, new)
    return Family(name, new, turned or moved.max() > 1e-12, shoulder, drift,
                  max(turn, float(moved.max())), tilt)


def _drift(g, new):
    """Bounds on how far apart the true geometry ``g`` and the snapped one ``new`` put the tip
    at any configuration: ``(position [m], angle [rad])``.

    Each joint's motion turns about a line, ``x -> R (x - o) + o``. Snapping turns its axis
    by ``d`` (a rotation ``S``, so ``R' = S R S^T``) and moves its point to ``o'``:
    ``R' R^T = S (R S^T R^T)`` is two turns by ``d``, at most ``2 d`` together, and
    ``|R' - R| <= 2 d``; a point ``x`` moves by ``(R' - R)(x - o') + (I - R)(o' - o)``, at most
    ``2 d |x - o'| + 2 |h x (o' - o)|``. In the chain's product of motions the difference is
    the sum of each joint's alone, between the snapped motions before it and the true ones
    after, which are rigid: they turn that joint's difference without growing it, and keep
    the tip within the links' lengths from its point (``|x - o| <= r``). So the tip turns by at
    most ``sum 2 d`` and moves by at most ``sum 2 d (r + |o' - o|) + 2 |h x (o' - o)|`` -- for
    axes moved only across themselves, ``2 sum |d_i|`` of the lines' moves. A chain read
    backwards bounds the inverse pose: the tip then also moves by that angle times its
    distance from the root, at most the first point's plus the links'. Joints after the six
    held at other values than zero move the tip by a lever this leaves out
    (:func:`~ros_dynamics.engine.ik_held.hold` makes such a turned family checked).
    """
    twice = 2.0 * np.arcsin(np.clip(np.linalg.norm(cross(g.h, new.h), axis=1), 0.0, 1.0))
    moved = np.linalg.norm(cross(g.h, new.o - g.o), axis=1)       # (6,) off each true line
    links = np.linalg.norm(np.diff(np.vstack([g.o, g.p0]), axis=0), axis=1)
    reach = np.cumsum(links[::-1])[::-1]                           # (6,) point i to the tip
    shifted = np.linalg.norm(new.o - g.o, axis=1)
    tilt = float(twice.sum())
    drift = float((twice * (reach + shifted) + 2.0 * moved).sum())
    if g.reversed:
        drift += tilt * (float(np.linalg.norm(g.o[0])) + float(reach[0]))
    return drift, tilt


def _mv(R, v):
    return np.einsum('...ij,...j->...i', R, v)


def _perpendicular(k):
    """A unit vector at right angles to ``k`` (3,)."""
    v = cross(k, _I3[np.argmin(np.abs(k))])
    return v / np.linalg.norm(v)


def _three_parallel(g, R, p, _shoulder):
    h, o = g.h, g.o
    p01, p12, p23, p34, p45 = o[0], o[1] - o[0], o[2] - o[1], o[3] - o[2], o[4] - o[3]
    p6T = g.p0 - o[5]
    R06 = R @ g.R0.T                                               # (N, 3, 3)
    N = len(R)
    x = p - _mv(R06, p6T) - p01                                    # (N, 3)
    q1, e1 = sp4(x, h[1], h[0], h[1] @ (p12 + p23 + p34 + p45))    # (N, 2)
    R01 = rot(h[0], q1)                                            # (N, 2, 3, 3)
    R16 = np.swapaxes(R01, -1, -2) @ R06[:, None]                  # (N, 2, 3, 3)
    q5, e5 = sp4(h[1], h[5], h[4], _mv(R16, h[5]) @ h[1])          # (N, 2, 2)
    R45 = rot(h[4], q5)                                            # (N, 2, 2, 3, 3)
    R16b = R16[:, :, None]
    v = np.einsum('nai,naij->naj', np.broadcast_to(h[1], (N, 2, 3)), R16)   # R16^T h2 (N,2,3)
    q6 = sp1(v[:, :, None], _mv(np.swapaxes(R45, -1, -2), h[1]), h[5])      # (N, 2, 2)
    R14 = R16b @ np.swapaxes(rot(h[5], q6), -1, -2) @ np.swapaxes(R45, -1, -2)
    w = _perpendicular(h[1])
    q14 = sp1(w, _mv(R14, w), h[1])                                # (N, 2, 2)
    x1 = _mv(np.swapaxes(R01, -1, -2), x[:, None])[:, :, None] - p12 - _mv(R14, p45)
    q3, e3 = sp3(p34, -p23, h[2], np.linalg.norm(x1, axis=-1))     # (N, 2, 2, 2)
    y = p23 + rotate(h[2], q3, p34)                                # (N, 2, 2, 2, 3)
    q2 = sp1(y, x1[:, :, :, None], h[1])                           # (N, 2, 2, 2)
    shape = (N, 2, 2, 2)
    Q = np.stack([np.broadcast_to(q1[:, :, None, None], shape), q2, q3,
                  _fourth(g.h, q14[..., None], q2, q3),
                  np.broadcast_to(q5[..., None], shape), np.broadcast_to(q6[..., None], shape)],
                 axis=-1)
    exact = e1[:, None, None, None] & e5[:, :, None, None] & e3[..., None]
    return Q.reshape(N, 8, 6), np.broadcast_to(exact, shape).reshape(N, 8)


def _fourth(h, q14, q2, q3):
    """Angle 4 of three parallel axes 2, 3 and 4 (``h`` (6, 3), axes 3 and 4 each along or
    against axis 2) whose turns add up to ``q14`` about axis 2: ``rot(h2, q2) rot(h3, q3)
    rot(h4, q4) = rot(h2, q2 + s3 q3 + s4 q4)`` with ``s = +-1`` (Centauro's legs turn their
    knees against their hips).
    """
    s3, s4 = np.sign(h[[2, 3]] @ h[1])
    return s4 * (q14 - q2 - s3 * q3)


def _three_parallel_offset(g, R, p, _shoulder):
    """Axes 2, 3 and 4 parallel (``h``), axes 5 and 6 apart. With ``R' = R R0^T = R1 ... R6``
    and ``x = p - o1 - R' (p0 - o6)``, the component along ``h`` is untouched by joints 2 to 4:
    ``h . R1^T x = h . (o5 - o1) + h . R5 (o6 - o5)`` and ``h . R1^T R' h6 = h . R5 h6``,
    subproblem 6 in angles 1 and 5 (four pairs); then as :func:`_three_parallel`, with
    ``R5 (o6 - o5)`` in the arm's reach.
    """
    h, o = g.h, g.o
    hh = h[1]
    p12, p23, p34, p45, p56 = o[1] - o[0], o[2] - o[1], o[3] - o[2], o[4] - o[3], o[5] - o[4]
    R06 = R @ g.R0.T                                               # (N, 3, 3)
    N = len(R)
    x = p - _mv(R06, g.p0 - o[5]) - o[0]                           # (N, 3)
    P = np.stack([x, np.broadcast_to(p56, (N, 3)), _mv(R06, h[5]),
                  np.broadcast_to(h[5], (N, 3))], axis=1)          # (N, 4, 3)
    d = np.broadcast_to([hh @ (o[4] - o[0]), 0.0], (N, 2))
    # R1^T = rot(h1, -q1) = rot(-h1, q1).
    q1, q5, e15 = sp6(np.stack([hh, -hh, hh, -hh]), np.stack([-h[0], h[4]]), P, d)
    R01 = rot(h[0], q1)                                            # (N, 4, 3, 3)
    R16 = np.swapaxes(R01, -1, -2) @ R06[:, None]                  # (N, 4, 3, 3)
    R45 = rot(h[4], q5)                                            # (N, 4, 3, 3)
    v = np.einsum('i,naij->naj', hh, R16)                          # R16^T h (N, 4, 3)
    q6 = sp1(v, _mv(np.swapaxes(R45, -1, -2), hh), h[5])           # (N, 4)
    R14 = R16 @ np.swapaxes(rot(h[5], q6), -1, -2) @ np.swapaxes(R45, -1, -2)
    w = _perpendicular(hh)
    q14 = sp1(w, _mv(R14, w), hh)                                  # (N, 4)
    x1 = _mv(np.swapaxes(R01, -1, -2), x[:, None]) - p12 - _mv(R14, p45 + _mv(R45, p56))
    q3, e3 = sp3(p34, -p23, h[2], np.linalg.norm(x1, axis=-1))     # (N, 4, 2)
    y = p23 + rotate(h[2], q3, p34)                                # (N, 4, 2, 3)
    q2 = sp1(y, x1[:, :, None], hh)                                # (N, 4, 2)
    shape = (N, 4, 2)
    Q = np.stack([np.broadcast_to(q1[..., None], shape), q2, q3,
                  _fourth(g.h, q14[..., None], q2, q3),
                  np.broadcast_to(q5[..., None], shape), np.broadcast_to(q6[..., None], shape)],
                 axis=-1)
    exact = np.broadcast_to((e15 & e3)[..., None], shape)
    Q[~e15] = np.nan                                               # no pose: nothing to polish
    return Q.reshape(N, 8, 6), exact.reshape(N, 8)


def _spherical_wrist(g, R, p, shoulder):
    h, o = g.h, g.o
    N = len(R)
    p01, p12, p23, p3c = o[0], o[1] - o[0], o[2] - o[1], o[3] - o[2]
    R06 = R @ g.R0.T
    c = p - _mv(R06, g.p0 - o[5]) - p01                            # wrist centre - p01 (N, 3)
    if shoulder == 'parallel':
        q1, e1 = sp4(c, h[1], h[0], h[1] @ (p12 + p23 + p3c))      # (N, 2)
        y = rotate(h[0], -q1, c[:, None]) - p12                   # (N, 2, 3)
        q3, e3 = sp3(p3c, -p23, h[2], np.linalg.norm(y, axis=-1))  # (N, 2, 2)
        v = p23 + rotate(h[2], q3, p3c)                            # (N, 2, 2, 3)
        q2 = sp1(v, y[:, :, None], h[1])
        q1 = np.broadcast_to(q1[..., None], (N, 2, 2))
        exact = e1[:, None, None] & e3[:, :, None]
    elif shoulder == 'meeting':                                    # axes 1 and 2 meet at o1
        q3, e3 = sp3(p3c, -p23, h[2], np.linalg.norm(c, axis=-1))  # (N, 2)
        v = p23 + rotate(h[2], q3, p3c)                            # (N, 2, 3)
        q1, q2, e12 = sp2(np.broadcast_to(c[:, None], (N, 2, 3)), v, -h[0], h[1])  # (N, 2, 2)
        q3 = np.broadcast_to(q3[..., None], (N, 2, 2))
        exact = e3[:, None, None] & e12[:, :, None]
    else:                                                # axes 2 and 3 meet at o2 = o3
        # rot(h2, q2) rot(h3, q3) p3c = rot(h1, -q1) c - p12 keeps its length |p3c|.
        q1, e1 = sp3(c, p12, -h[0], np.linalg.norm(p3c))           # (N, 2)
        y = rotate(h[0], -q1, c[:, None]) - p12                    # (N, 2, 3)
        q2, q3, e23 = sp2(y, np.broadcast_to(p3c, y.shape), -h[1], h[2])  # (N, 2, 2)
        q1 = np.broadcast_to(q1[..., None], (N, 2, 2))
        exact = e1[:, None, None] & e23[:, :, None]
    # R36 = R03^T R06 on h6 and on w (at right angles to h6): R06 h6 and R06 w turned back
    # about axes 1, 2 and 3 (N, 2, 2, [h6, w], 3).
    w = _perpendicular(h[5])
    V = _mv(R06[:, None], np.stack([h[5], w]))[:, None, None]     # (N, 1, 1, 2, 3)
    for k, q in ((h[0], q1), (h[1], q2), (h[2], q3)):
        V = rotate(k, -q[..., None], V)
    q4, q5, e45 = sp2(V[..., 0, :], np.broadcast_to(h[5], (N, 2, 2, 3)), -h[3], h[4])
    W = rotate(h[4], -q5, rotate(h[3], -q4, V[..., 1, None, :]))  # R35^T R36 w (N, 2, 2, 2, 3)
    q6 = sp1(w, W, h[5])
    shape = (N, 2, 2, 2)
    Q = np.stack([np.broadcast_to(q1[..., None], shape), np.broadcast_to(q2[..., None], shape),
                  np.broadcast_to(q3[..., None], shape), q4, q5, q6], axis=-1)
    exact = exact[..., None] & e45[..., None]
    return Q.reshape(N, 8, 6), np.broadcast_to(exact, shape).reshape(N, 8)


def polish(chain, X, T_targets, active, tolerance, settle=True, near=None):
    """Gauss-Newton steps on the true chain for the configurations ``X`` (B, m) of
    ``chain.moved`` toward ``T_targets`` (B, 4, 4, or one (4, 4)) in the root frame, moving only
    the six joints ``active`` (m, bool); each row ends where its largest error component was
    least, in place; returns the pose errors (B, 6) there. Rows with that component above
    ``tolerance`` step, at most :data:`POLISH_STEPS` -- with ``settle``, so do those already
    within it while any does, to rounding (near a singular configuration a pose error of 1e-6
    can be 1e-4 rad off the solution), each stopping at its first step that does not improve it
    (there a step can throw a branch far off). A row stops once it is off by more than ``near``
    (default :data:`POLISH_NEAR`: a least-squares branch of a target out of reach, not one a
    snapping moved), and is not polished if it starts so, or with NaN. A row off by the
    snapping near a singularity may get worse before it converges (a first step from 1e-3 to
    1.4e-3, then 1e-16 in four more, on a calibrated UR5).
    """
    T_targets = np.asarray(T_targets)
    if not len(X):
        return np.empty((0, 6))
    # One target: its error matrix built once (pose_error's; the axes of errors past 2.5 rad,
    # of rows that never step, are refined at the end).
    error = PoseError(T_targets) if T_targets.ndim == 2 else None
    every = bool(active.all())
    # The Jacobians with the poses: a call that steps evaluates the chain once less.
    T0, JT = chain.evaluate(X)
    e = error(T0) if error is not None else pose_error(T0, T_targets)
    size = np.abs(e).max(axis=1)
    limit = POLISH_NEAR if near is None else near
    near_rows = size < limit                                       # NaN rows are not
    if not np.any(near_rows & (size > tolerance)):
        return _refined(e, T0, T_targets, error)
    rows = np.flatnonzero(near_rows if settle else near_rows & (size > tolerance))
    W, E, best = X[rows], e[rows], size[rows]      # the rows polished, at their best so far
    best_W, best_E = W.copy(), E.copy()
    alive = np.arange(len(rows))
    JT = JT[rows]
    for _ in range(POLISH_STEPS):
        w = W[alive] + _gauss_newton_step(JT, E[alive], None if every else active)
        T, JT = chain.evaluate(w)
        new_E = error(T) if error is not None else pose_error(T, T_targets[rows[alive]])
        W[alive], E[alive] = w, new_E
        new = np.abs(new_E).max(axis=1)
        better = new < best[alive]
        settled = best[alive] <= tolerance
        won = alive[better]
        best_W[won], best_E[won], best[won] = w[better], new_E[better], new[better]
        going = ~(settled & ~better) & (new < limit)
        if not going.all():
            alive, JT = alive[going], JT[going]
        if not np.any(best[alive] > tolerance):
            break
    X[rows], e[rows] = best_W, best_E
    return _refined(e, T0, T_targets, error)


def _refined(e, T, T_target, error):
    """The errors ``e`` (B, 6) of :func:`polish` against one target (``error``, a
    :class:`~ros_dynamics.engine.ik_search.PoseError`; None: as they are), with the axes of
    those past 2.5 rad -- never stepped, their poses still ``T`` (B, 4, 4) -- recomputed as
    :func:`~ros_dynamics.engine.ik_search.pose_error` does.
    """
    if error is not None:
        far = np.einsum('ij,ij->i', e[:, 3:], e[:, 3:]) > 2.5 ** 2
        if far.any():
            e[far] = pose_error(T[far], T_target)
    return e


def _gauss_newton_step(JT, e, active):
    """Gauss-Newton steps (B, m) of rows with transposed Jacobians ``JT`` (B, m, 6) and pose
    errors ``e`` (B, 6), moving the six joints ``active`` (m, bool; None: all six).
    """
    J = (JT if active is None else JT[:, active]).transpose(0, 2, 1)   # (B, 6, 6)
    try:
        step = np.linalg.solve(J, e[..., None])[..., 0]
    except np.linalg.LinAlgError:                               # a singular row: least squares
        step = (np.linalg.pinv(J) @ e[..., None])[..., 0]
    if active is None:
        return step
    out = np.zeros(JT.shape[:2])
    out[:, active] = step
    return out


def in_limits(X, x_seed, lower, upper, turning=None, slack=LIMIT_SLACK):
    """Each value of ``X`` (B, m) moved by the whole turns that bring it nearest ``x_seed``
    (m,) inside ``[lower, upper]`` (m,) -- only where ``turning`` (m, bool; default: all) says
    the joint is an angle, a slide must be inside as it is -- which rows (B,) could all be
    brought inside, and which rows (B,) had a value clipped (their pose moved). Values within
    :data:`~ros_dynamics.engine.ik_chain.LIMIT_SLACK` of a limit count as inside and are
    clipped in (a turn added to an angle at its limit must not take it out by rounding); so do
    those within a wider ``slack`` that no turn brings inside (an angle a hair under a turn
    past its upper limit is turned in, not clipped).
    """
    k0 = np.round((x_seed - X) / _TURN)
    if turning is not None:
        k0 = np.where(turning, k0, 0.0)
    best = np.full_like(X, np.nan)
    for past in sorted({LIMIT_SLACK, slack}):
        for dk in (0.0, -1.0, 1.0):
            v = X + (k0 + dk) * _TURN
            fits = (v >= lower - past) & (v <= upper + past) & np.isnan(best)
            if dk and turning is not None:
                fits &= turning
            best[fits] = v[fits]
    clipped = ((best < lower) | (best > upper)).any(axis=1)            # NaN is neither
    np.clip(best, lower, upper, out=best)
    return best, ~np.isnan(best).any(axis=1), clipped


def _apply(M, v):
    """``M v`` for a 3x3 nested list and a 3-tuple."""
    (a, b, c), (d, e, f), (g, h, i) = M
    x, y, z = v
    return (a * x + b * y + c * z, d * x + e * y + f * z, g * x + h * y + i * z)


def _apply_t(M, v):
    """``M^T v`` for a 3x3 nested list and a 3-tuple."""
    (a, b, c), (d, e, f), (g, h, i) = M
    x, y, z = v
    return (a * x + d * y + g * z, b * x + e * y + h * z, c * x + f * y + i * z)


def _combination(x, a, y, b, z, c):
    """``x a + y b + z c`` for floats ``x``, ``y``, ``z`` and 3-tuples."""
    return (x * a[0] + y * b[0] + z * c[0], x * a[1] + y * b[1] + z * c[1],
            x * a[2] + y * b[2] + z * c[2])


def _sub(a, b):
    return (a[0] - b[0], a[1] - b[1], a[2] - b[2])


def _add(a, b):
    return (a[0] + b[0], a[1] + b[1], a[2] + b[2])


def _neg(a):
    return (-a[0], -a[1], -a[2])


def _three_parallel_one(v, R06, p, _shoulder, exact_only, limits, singular_q5, near):
    """:func:`_three_parallel` for one pose (see :meth:`Family.solve_one`; ``limits`` and
    ``near`` in the order solved, ``singular_q5``: :attr:`Family._singular_q5`). At the wrist
    singularity angles 2, 3, 4 and 6 are not pruned (angle 6 and the sum 2 + 3 + 4 of the
    continuum).
    """
    l1, l2, l3, l4, l5, l6 = limits
    h1, h2, h3, _, h5, h6 = v['h']
    s3, s4 = v['s34']
    p12, p23, p34, p45, _ = v['p']
    x = _sub(_sub(p, _apply(R06, v['p6T'])), v['p01'])
    d1 = dot3(h2, _add(_add(p12, p23), _add(p34, p45)))
    R06h6, w = _apply(R06, h6), v['w2']
    # R16^T h2 = R06^T R01 h2 and R45^T h2 by Rodrigues' formula (as the offset wrist's).
    (h1xh2, h1h2), (h5xh2, h5h2) = v['h1h2'], v['h5h2']
    A, B, C = _apply_t(R06, h2), _apply_t(R06, h1xh2), _apply_t(R06, h1)
    out = []
    q1s, e1 = sp4_one(x, h2, h1, d1)
    if exact_only and not e1:
        return out
    for q1 in q1s:
        if l1 and _misses(q1, l1):
            continue
        c1, s1 = math.cos(q1), math.sin(q1)
        a = rotate_cs(h1, c1, -s1, R06h6)                            # R16 h6
        b = _combination(c1, A, s1, B, (1.0 - c1) * h1h2, C)         # R16^T h2
        x1base = _sub(rotate_cs(h1, c1, -s1, x), p12)
        q5s, e5 = sp4_one(h2, h6, h5, dot3(h2, a))
        if exact_only and not e5:
            continue
        for q5 in q5s:
            if l5 and _misses(q5, l5):
                continue
            prune = not _at_singularity(q5, singular_q5)
            c5, s5 = math.cos(q5), -math.sin(q5)                     # of -q5
            q6 = sp1_one(b, _combination(c5, h2, s5, h5xh2, (1.0 - c5) * h5h2, h5), h6)
            if prune and l6 and _misses(q6, l6):
                continue
            # R14 = rot(h2, q14) takes R45 h6 to R16 h6 = a: one rotation -- unless R45 h6
            # nears h2 (the wrist singularity, q6 and q14 coupled), where R14 w (w at right
            # angles to h2) after this q6 keeps the pair consistent.
            u = rotate_cs(h5, c5, -s5, h6)                           # R45 h6 (unit)
            if abs(dot3(u, h2)) < 0.8:                               # 37 deg or more apart
                q14 = sp1_one(u, a, h2)
            else:
                q14 = sp1_one(w, rotate_cs(h1, c1, -s1, _apply(R06, rotate3(
                    h6, -q6, rotate_cs(h5, c5, s5, w)))), h2)
            if near is not None and not prune:
                if q5 is not q5s[0] and q5 == q5s[0]:          # a tangency's twin: the same
                    continue
                out.extend(((q1, q2, q3, q4, q5, q6), e1 and e5 and e3) for (q2, q3, q4, q6), e3
                           in _nearest_on_continuum(v, x1base, p45, q14, q6,
                                                    math.copysign(1.0, dot3(u, h2)), near))
                continue
            x1 = _sub(x1base, rotate3(h2, q14, p45))
            q3s, e3 = sp3_one(p34, _neg(p23), h3, math.sqrt(dot3(x1, x1)))
            if exact_only and not e3:
                continue
            for q3 in q3s:
                if prune and l3 and _misses(q3, l3):
                    continue
                q2 = sp1_one(_add(p23, rotate3(h3, q3, p34)), x1, h2)
                out.append(((q1, q2, q3, s4 * (q14 - q2 - s3 * q3), q5, q6),
                            e1 and e5 and e3))
    return out


def _spherical_wrist_one(v, R06, p, shoulder, exact_only, limits, singular_q5, near):
    """:func:`_spherical_wrist` for one pose (see :meth:`Family.solve_one`; ``limits`` and
    ``near`` in the order solved, ``singular_q5``: :attr:`Family._singular_q5`). At the wrist
    singularity angles 4 and 6 (the continuum's) are not pruned.
    """
    l1, l2, l3, l4, l5, l6 = limits
    h1, h2, h3, h4, h5, h6 = v['h']
    p12, p23, p3c, _, _ = v['p']
    c = _sub(_sub(p, _apply(R06, v['p6T'])), v['p01'])              # wrist centre - p01
    arms = []                                                        # (q1, q2, q3, exact)
    if shoulder == 'parallel':
        q1s, e1 = sp4_one(c, h2, h1, dot3(h2, _add(_add(p12, p23), p3c)))
        if exact_only and not e1:
            return []
        for q1 in q1s:
            if l1 and _misses(q1, l1):
                continue
            y = _sub(rotate3(h1, -q1, c), p12)
            q3s, e3 = sp3_one(p3c, _neg(p23), h3, math.sqrt(dot3(y, y)))
            for q3 in q3s:
                if not (l3 and _misses(q3, l3)):
                    q2 = sp1_one(_add(p23, rotate3(h3, q3, p3c)), y, h2)
                    arms.append((q1, q2, q3, e1 and e3))
    elif shoulder == 'meeting':
        q3s, e3 = sp3_one(p3c, _neg(p23), h3, math.sqrt(dot3(c, c)))
        if exact_only and not e3:
            return []
        for q3 in q3s:
            if not (l3 and _misses(q3, l3)):
                pairs, e12 = sp2_one(c, _add(p23, rotate3(h3, q3, p3c)), _neg(h1), h2)
                arms.extend((q1, q2, q3, e3 and e12) for q1, q2 in pairs)
    else:                                                # axes 2 and 3 meet
        q1s, e1 = sp3_one(c, p12, _neg(h1), math.sqrt(dot3(p3c, p3c)))
        if exact_only and not e1:
            return []
        for q1 in q1s:
            if l1 and _misses(q1, l1):
                continue
            pairs, e23 = sp2_one(_sub(rotate3(h1, -q1, c), p12), p3c, _neg(h2), h3)
            arms.extend((q1, q2, q3, e1 and e23) for q2, q3 in pairs
                        if not (l3 and _misses(q3, l3)))
    R06h6, R06w = _apply(R06, h6), _apply(R06, v['w6'])
    # R03^T = rot(h3, -q3) rot(h2, -q2) rot(h1, -q1): one turn about h2 for parallel axes 2
    # and 3 (h3 = +-h2), and one turn about h1 for the arms sharing q1.
    along = math.copysign(1.0, dot3(h2, h3)) if shoulder == 'parallel' else None
    out = []
    back1 = {}
    for q1, q2, q3, e in arms:
        if exact_only and not e or l1 and _misses(q1, l1) or l2 and _misses(q2, l2):
            continue
        if q1 not in back1:
            c, s = math.cos(q1), -math.sin(q1)
            back1[q1] = rotate_cs(h1, c, s, R06h6), rotate_cs(h1, c, s, R06w)
        R36h6, R36w = back1[q1]
        turns = ((h2, q2 + along * q3),) if along is not None else ((h2, q2), (h3, q3))
        for k, t in turns:                                         # turned back by -t
            c, s = math.cos(t), -math.sin(t)
            R36h6, R36w = rotate_cs(k, c, s, R36h6), rotate_cs(k, c, s, R36w)
        pairs, e45 = sp2_one(R36h6, h6, _neg(h4), h5)
        if exact_only and not e45:
            continue
        for q4, q5 in pairs:
            prune = not _at_singularity(q5, singular_q5)
            if l5 and _misses(q5, l5) or prune and l4 and _misses(q4, l4):
                continue
            q6 = sp1_one(v['w6'], rotate3(h5, -q5, rotate3(h4, -q4, R36w)), h6)
            if prune and l6 and _misses(q6, l6):
                continue
            if near is not None and not prune:
                turn = math.copysign(1.0, dot3(rotate3(h5, q5, h6), h4))
                q4, q6 = _into_limits(*_along_continuum(q4, q6, turn, near[3], near[5]), turn,
                                      l4, l6)
            out.append(((q1, q2, q3, q4, q5, q6), e and e45))
    return out


_SOLVERS = {'three_parallel': _three_parallel, 'three_parallel_offset': _three_parallel_offset,
            'spherical_wrist': _spherical_wrist}


def _three_parallel_offset_one(v, R06, p, _shoulder, exact_only, limits, singular_q5, near):
    """:func:`_three_parallel_offset` for one pose (see :meth:`Family.solve_one`; ``limits``
    and ``near`` in the order solved, ``singular_q5``: :attr:`Family._singular_q5`).
    """
    l1, l2, l3, l4, l5, l6 = limits
    h1, h2, h3, _, h5, h6 = v['h']
    s3, s4 = v['s34']
    p12, p23, p34, p45, p56 = v['p']
    x = _sub(_sub(p, _apply(R06, v['p6T'])), v['p01'])
    d = dot3(h2, _add(_add(p12, p23), _add(p34, p45)))
    m2 = _neg(h2)
    pairs = sp6_one((h2, m2, h2, m2), (_neg(h1), h5), (x, p56, _apply(R06, h6), h6), (d, 0.0))
    w = v['w2']
    # R16^T h2 = R06^T R01 h2 = c1 a + s1 b + (1 - c1) c (Rodrigues), R45^T h2 likewise.
    (h1xh2, h1h2), (h5xh2, h5h2) = v['h1h2'], v['h5h2']
    a, b, c = _apply_t(R06, h2), _apply_t(R06, h1xh2), _apply_t(R06, h1)
    out = []
    for q1, q5, e15 in pairs:
        if not e15:                  # a root off the circle: no pose, and no singular one
            continue
        prune = not _at_singularity(q5, singular_q5)
        if prune and (l1 and _misses(q1, l1) or l5 and _misses(q5, l5)):
            continue
        c1, s1, c5, s5 = math.cos(q1), math.sin(q1), math.cos(q5), math.sin(q5)
        # R16^T h2 turned onto R45^T h2 by joint 6; R14 = R16 R6^T R45^T.
        k1, k5 = (1.0 - c1) * h1h2, (1.0 - c5) * h5h2
        q6 = sp1_one(_combination(c1, a, s1, b, k1, c), _combination(c5, h2, -s5, h5xh2, k5, h5),
                     h6)
        if prune and l6 and _misses(q6, l6):
            continue
        r14w = rotate_cs(h1, c1, -s1, _apply(R06, rotate_cs(h6, math.cos(q6), -math.sin(q6),
                                                           rotate_cs(h5, c5, -s5, w))))
        q14 = sp1_one(w, r14w, h2)                                   # R14 = rot(h2, q14)
        base, arm = _sub(rotate_cs(h1, c1, -s1, x), p12), _add(p45, rotate_cs(h5, c5, s5, p56))
        if near is not None and not prune:
            out.extend(((q1, q2, q3, q4, q5, q6), e15 and e3) for (q2, q3, q4, q6), e3
                       in _nearest_on_continuum(v, base, arm, q14, q6, math.copysign(
                           1.0, dot3(rotate_cs(h5, c5, s5, h6), h2)), near))
            continue
        x1 = _sub(base, rotate3(h2, q14, arm))
        q3s, e3 = sp3_one(p34, _neg(p23), h3, math.sqrt(dot3(x1, x1)))
        if exact_only and not e3:
            continue
        for q3 in q3s:
            if prune and l3 and _misses(q3, l3):
                continue
            q2 = sp1_one(_add(p23, rotate3(h3, q3, p34)), x1, h2)
            out.append(((q1, q2, q3, s4 * (q14 - q2 - s3 * q3), q5, q6), e15 and e3))
    return out


_SOLVERS_ONE = {'three_parallel': _three_parallel_one,
                'three_parallel_offset': _three_parallel_offset_one,
                'spherical_wrist': _spherical_wrist_one}
#: No limits: every angle fits.
_OPEN = (None,) * 6


def _misses(x, limit):
    """Whether angle ``x`` misses ``limit``, a ``(lower, upper, turning)`` triple: no whole
    turn of it lies inside when ``turning``, else ``x`` itself is outside.
    """
    lower, upper, turning = limit
    if turning and lower > -math.inf:
        x = lower + (x - lower) % _TURN              # the lowest turn of x above lower
    return not lower <= x <= upper


def _nearest_on_continuum(v, base, arm, q14, q6, s, near):
    """Three parallel axes at the wrist singularity (axis 6 along them, ``s`` +1, or against
    them, -1): only ``q14 + s * q6`` is fixed, ``q14`` the sum of angles 2 to 4 about them;
    for each ``q14`` the point the planar pair places (``base - rot(h2, q14) arm``, from axis
    2) gives angles 2 and 3 (two elbows). For each elbow, ``((q2, q3, q4, q6), exact)`` at the
    ``q14`` nearest ``near`` (the seed's six, in the order solved) in those four angles (the
    whole turns between them left out): from the split of :func:`_along_continuum`, moved
    within the elbow's reach (:func:`_within_reach`), Gauss-Newton steps over ``q14`` (at most
    :data:`CONTINUUM_STEPS`; a step that brings none nearer, or an elbow out of reach,
    halved), since the elbow moves with the point.
    """
    h2, h3 = v['h'][1], v['h'][2]
    s3, s4 = v['s34']
    p23, p34 = v['p'][1], v['p'][2]
    total = q14 + s * q6
    a = (near[1], near[2], near[3], near[5])

    def at(q14, elbow):
        """The four angles and whether the elbow reaches, their residuals from ``a`` and
        derivatives in ``q14``: the point moves by ``h2 x (x1 - base)``, which angles 2 and 3
        give as ``d2 h2 x x1 + s3 d3 h2 x (x1 - elbow)`` (in the plane of the pair).
        """
        x1 = _sub(base, rotate3(h2, q14, arm))
        q3s, exact = sp3_one(p34, _neg(p23), h3, math.sqrt(dot3(x1, x1)))
        q3 = q3s[elbow]
        q2 = sp1_one(_add(p23, rotate3(h3, q3, p34)), x1, h2)
        x = (q2, q3, s4 * (q14 - q2 - s3 * q3), s * (total - q14))
        to_elbow, moved = _sub(x1, rotate3(h2, q2, p23)), _sub(x1, base)
        den = dot3(_cross3(x1, to_elbow), h2)
        d2 = dot3(_cross3(moved, to_elbow), h2) / den if den else 0.0
        d3 = s3 * dot3(_cross3(x1, moved), h2) / den if den else 0.0
        return x, exact, [wrap_one(xi - ai) for xi, ai in zip(x, a)], \
            (d2, d3, s4 * (1.0 - d2 - s3 * d3), -s)

    start, _ = _along_continuum(q14, q6, s, near[1] + s3 * near[2] + s4 * near[3], near[5])
    start = _within_reach(v, base, arm, start)
    out = []
    for elbow in (0, 1):
        q14 = start
        x, exact, r, J = at(q14, elbow)
        cost = _dot4(r, r)
        for _ in range(CONTINUUM_STEPS):
            step = -_dot4(J, r) / _dot4(J, J)                    # J holds -s: never zero
            if abs(step) < _CLOSE:
                break
            for _ in range(_HALVINGS):
                new = at(q14 + step, elbow)
                if new[1] and _dot4(new[2], new[2]) < cost:
                    break
                step *= 0.5
            else:
                break
            q14 += step
            x, exact, r, J = new
            cost = _dot4(r, r)
        out.append((x, exact))
    return out


def _within_reach(v, base, arm, q14):
    """``q14`` (three parallel axes at the wrist singularity, :func:`_nearest_on_continuum`),
    or where the planar pair of axes 2 and 3 cannot reach the point it places, the nearest
    angle (a nanoradian inside) where it can -- else ``q14`` as it is. The split of the
    continuum can place the point beyond the elbow's reach (stretched or folded), and every
    step from there was refused, the branch judged out of reach and left out (UR10's limited
    description, joint 5 at 0: 12 of 300 targets answered 0.5 rad or more farther from the
    seed than the configuration that made them, a review's). The point ``base - rot(h2, q)
    arm`` is ``|x1|^2 = k - 2 rho cos(q - phi)`` from axis 2; the pair reaches
    ``|p23 + rot(h3, t) p34|`` for every ``t``, ``m -+ 2 sigma``.
    """
    h2, h3 = v['h'][1], v['h'][2]
    p23, p34 = v['p'][1], v['p'][2]
    arm_across = _sub(arm, _scaled(dot3(h2, arm), h2))
    a, b = dot3(base, arm_across), dot3(base, _cross3(h2, arm_across))
    rho, phi = math.hypot(a, b), math.atan2(b, a)
    k = dot3(base, base) + dot3(arm, arm) - 2.0 * dot3(base, _sub(arm, arm_across))
    p34_across = _sub(p34, _scaled(dot3(h3, p34), h3))
    sigma = math.hypot(dot3(p23, p34_across), dot3(p23, _cross3(h3, p34_across)))
    m = dot3(p23, p23) + dot3(p34, p34) + 2.0 * dot3(p23, _sub(p34, p34_across))
    if not rho > 0.0:                   # the point's distance from axis 2 fixed: as it is
        return q14
    # cos(q - phi) within [low, high]: q - phi in +-[acos(high), acos(low)].
    low, high = (k - m - 2.0 * sigma) / (2.0 * rho), (k - m + 2.0 * sigma) / (2.0 * rho)
    if low > 1.0 or high < -1.0 or low <= math.cos(q14 - phi) <= high:
        return q14
    inner, outer = math.acos(min(1.0, high)), math.acos(max(-1.0, low))
    t = wrap_one(q14 - phi)
    ends = ((inner, 1.0), (outer, -1.0), (-inner, -1.0), (-outer, 1.0))   # (end, inward)
    end, inward = min(ends, key=lambda e: abs(wrap_one(e[0] - t)))
    return q14 + wrap_one(end - t) + inward * _REACH_INSIDE


#: [rad] How far inside the elbow's reach :func:`_within_reach` puts a point of the continuum.
_REACH_INSIDE = 1e-9


def _scaled(c, a):
    """``c a`` (a float, a 3-tuple)."""
    return (c * a[0], c * a[1], c * a[2])


def _dot4(a, b):
    """``a . b`` (4-sequences)."""
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2] + a[3] * b[3]


def _cross3(a, b):
    """``a x b`` (3-tuples)."""
    return (a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0])


#: Gauss-Newton steps at most of :func:`_nearest_on_continuum`, each halved at most
#: ``_HALVINGS`` times; it stops at a step under ``_CLOSE`` [rad] (nearer by a rounding only).
#: On the UR5, seeds 0.1 rad off (200): the split alone left 5 % of the answers 0.2 rad or
#: more from the seed; one step 0.106, two 0.104, six 0.103. From the middle of UR10's limited
#: description's limits, a start at the elbow's reach (:func:`_within_reach`) needs more: of
#: 300 targets with joint 5 at 0, the nearest solution was more than 0.1 rad farther from the
#: seed than the target's own configuration 5 times with two steps, twice with six.
CONTINUUM_STEPS, _HALVINGS, _CLOSE = 6, 4, 1e-6


def _along_continuum(q4, q6, s, a4, a6):
    """At the wrist singularity only ``q4 + s * q6`` is fixed (``s``: +1 where joint 5 turns
    axis 6 along axis 4, -1 against; ``q4`` joint 4's angle, or for three parallel axes the
    sum of angles 2 to 4 about them): the pair on that line nearest ``(a4, a6)``, the
    difference split evenly between the two, each within a quarter turn of its own.
    """
    e = wrap_one(q4 - a4 + s * (q6 - a6))
    return a4 + 0.5 * e, a6 + 0.5 * s * e


#: [rad] A point of the wrist singularity's continuum moved into the limits stops this far
#: inside those given (:func:`_into_limits`): one answer widens them by as much
#: (``ik_answers.POLISH_REACH``; a slightly snapped geometry's by more, and its points so
#: moved may stay outside the true limits: the search then answers).
CONTINUUM_INSIDE = 0.01


def _into_limits(q4, q6, s, l4, l6):
    """The point of the continuum ``q4 + s * q6`` = constant (:func:`_along_continuum`)
    nearest ``(q4, q6)`` with both angles :data:`CONTINUUM_INSIDE` inside their limits ``l4``
    and ``l6`` (``(lower, upper, turning)`` or None: any angle), each moved by the whole turns
    that bring it nearest them; ``(q4, q6)`` as they are where no point is, or they are inside.
    Along the line ``(q4 + t, q6 - s t)``: an interval of ``t`` for each angle, then ``t``
    nearest 0 in both.
    """
    pairs = ((q4, l4), (q6, l6))
    if all(limit is None or limit[0] + CONTINUUM_INSIDE <= x <= limit[1] - CONTINUUM_INSIDE
           for x, limit in pairs):
        return q4, q6
    low, high = -math.inf, math.inf
    for k, (x, limit) in enumerate(pairs):
        if limit is None:
            continue
        lower, upper, turning = limit
        lower, upper = lower + CONTINUUM_INSIDE, upper - CONTINUUM_INSIDE
        if lower > upper:
            return q4, q6
        if turning:                                  # the turn of x nearest the limits' middle
            x += _TURN * round((0.5 * (lower + upper) - x) / _TURN)
        # The angle moves by t (angle 4) or -s t (angle 6).
        a, b = (lower - x, upper - x) if k == 0 or s < 0 else (x - upper, x - lower)
        low, high = max(low, a), min(high, b)
        if k == 0:
            q4 = x
        else:
            q6 = x
    if low > high:
        return q4, q6
    t = min(max(0.0, low), high)
    return q4 + t, q6 - s * t


def _at_singularity(q5, singular_q5):
    """Whether angle 5 ``q5`` is at the wrist singularity (:meth:`Family.any_singular`)."""
    if singular_q5 is None:
        return False
    d = (q5 - singular_q5) % math.pi
    return d < SINGULAR_ANGLE or d > math.pi - SINGULAR_ANGLE


_TURN = 2.0 * math.pi
