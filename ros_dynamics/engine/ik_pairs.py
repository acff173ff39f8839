"""Inverse kinematics of six revolute joints whose axes meet in pairs -- axes 1 and 2 in a point
A, 3 and 4 in B, 5 and 6 in C -- by a search over one angle, the other five in closed form.

Baxter's arm has this geometry once its first joint is held (:mod:`.ik_held` holds it and
turns the target), and no family of :mod:`.ik_analytic` fits it: its wrist's axes 4 and 5 are
10 mm apart. The decomposition is the one-dimensional search of IK-Geo (Elias and Wen,
*IK-Geo: Unified robot inverse kinematics using subproblem decomposition*, Mechanism and
Machine Theory 2024), here from a starting configuration rather than over a grid: turns of
joints 5 and 6 leave C in place, so the target puts it at ``C_t``, and by the product of
exponentials

    ``C_t - A = R1 R2 ((B - A) + R3 R4 (C - B))``.

For an angle ``q4``, ``q3`` keeps ``|C_t - A|`` (subproblem 3), ``q1`` and ``q2`` turn the arm
onto ``C_t - A`` (subproblem 2), and ``R5 R6 = (R1 R2 R3 R4)^T R_t M_R^T`` is left -- which two
turns about ``h5`` and ``h6`` give only when ``h5 . R5 R6 h6 = h5 . h6``. That scalar ``f(q4)``
is zero at the solutions of each of the four branches (the two roots of subproblems 3 and 2);
the secant method finds the root of the branch of a starting configuration next to it, and
subproblem 1 gives ``q5`` and ``q6``. Each evaluation of ``f`` is a few dozen float operations;
a root takes four to six (Baxter).
"""
from dataclasses import dataclass
import math
from typing import Optional

import numpy as np

from . import ik_analytic, ik_held
from .ik_analytic import _apply
from .subproblems import dot3, rotate3, rotate_cs, sp1_one, sp3_one, sp4_one

#: [m] Axes of a pair this far apart or nearer meet: the decomposition is exact (not snapped).
EXACT = 1e-9
#: Points A, B and C at least ``SEPARATION`` [m] apart, the axes of each pair at an angle whose
#: sine is at least ``CROSSING``: nearer ones leave the subproblems ill-conditioned, and the
#: search from the seed table's starts rarely converges (synthetic arms, 300 random targets:
#: axes 5 and 6 at 3 mrad answered 5, points A and B 2.5 mm apart 27, a generic arm 227).
SEPARATION, CROSSING = 0.01, 0.1
#: [rad] The secant method's largest step in ``q4``.
MAX_STEP = 0.5
#: Evaluations of ``f`` per root at most.
EVALUATIONS = 12
#: ``|f|`` at a root, a fraction of the smaller tolerance: the rotation left for joints 5 and 6
#: is off by about this [rad] (by this over the sine of the angle between axes 5 and 6), the tip
#: by that times its distance from C [m].
ROOT = 1e-3
#: Evaluations after which an angle ``q4`` past the arm's reach (subproblem 3 or 2 without an
#: exact root) stops the search: the start's branch has no root next to it.
INFEASIBLE = 1


@dataclass(frozen=True)
class PairedAxes:
    """The six joints ``held.free`` of a chain (the others ``held``, see
    :class:`~ros_dynamics.engine.ik_held.HeldJoints`), their axes meeting in pairs, as 3-tuples
    of floats in the root frame at the zero configuration: the axes ``h`` (six), ``a`` the point
    where axes 1 and 2 meet, ``b_a = B - A``, ``a_b = A - B``, ``c_b = C - B``; in the tip's zero
    frame ``c_tip`` (C), ``h6_tip`` (axis 6) and ``w6_tip`` (a unit vector at right angles to
    it, ``w6`` in the root frame); the indices ``held_index`` and ``free_index`` of the held
    joints and of the six.
    """

    held: ik_held.HeldJoints
    h: tuple
    a: tuple
    b_a: tuple
    a_b: tuple
    c_b: tuple
    c_tip: tuple
    h6_tip: tuple
    w6: tuple
    w6_tip: tuple
    #: Indices of the held joints and of the six among the chain's.
    held_index: tuple
    free_index: tuple

    def solve_near(self, T_target, x_start, tolerance):
        """The configuration (m floats) of the chain reaching ``T_target`` (4, 4) with the held
        joints at their values in ``x_start`` (m,) and the six on the branch of ``x_start``'s,
        the root of ``f`` nearest it -- not yet moved into the limits or checked on the chain --
        or None (no root found, or not exactly reached). ``tolerance``: the smaller of the
        position [m] and orientation [rad] tolerances.
        """
        x = x_start.tolist()
        G = self.held.turned(T_target, [x[i] for i in self.held_index])
        R, p = G[:3, :3].tolist(), G[:3, 3].tolist()
        c = _apply(R, self.c_tip)
        d = (c[0] + p[0] - self.a[0], c[1] + p[1] - self.a[1], c[2] + p[2] - self.a[2])
        arm = _Arm(self, d, _apply(R, self.h6_tip), ROOT * tolerance)
        root = arm.root([x[i] for i in self.free_index])
        if root is None:
            return None
        q1, q2, q3, q4, u = root
        h1, h2, h3, h4, h5, h6 = self.h
        q5 = sp1_one(h6, u, h5)                      # rot(h5, q5) h6 = R5 R6 h6
        y = rotate3(h1, -q1, _apply(R, self.w6_tip))
        for k, q in ((h2, q2), (h3, q3), (h4, q4), (h5, q5)):
            y = rotate3(k, -q, y)
        q6 = sp1_one(self.w6, y, h6)                 # rot(h6, q6) w6 = R5^T R5 R6 w6
        for i, q in zip(self.free_index, (q1, q2, q3, q4, q5, q6)):
            x[i] = q
        return x


class _Arm:
    """``f`` of one target: ``d = C_t - A`` and ``u = R_t M_R^T h6`` (3-tuples), its roots
    within ``tolerance``.
    """

    def __init__(self, pairs, d, u, tolerance):
        self.pairs, self.d, self.u, self.tolerance = pairs, d, u, tolerance
        self.distance = math.sqrt(dot3(d, d))
        self.minus_h1 = tuple(-x for x in pairs.h[0])
        self.h56 = dot3(pairs.h[4], pairs.h[5])

    def _arm(self, q4):
        """Subproblem 3's roots ``q3`` (two) at ``q4``, whether exact, the vector it turns and
        ``cos q4``, ``sin q4``.
        """
        P = self.pairs
        c4, s4 = math.cos(q4), math.sin(q4)
        w = rotate_cs(P.h[3], c4, s4, P.c_b)
        q3s, exact = sp3_one(w, P.a_b, P.h[2], self.distance)
        return q3s, exact, w, c4, s4

    def _v(self, c3, s3, w):
        """The arm ``v = (B - A) + R3 R4 (C - B)`` for ``R4 (C - B)`` = ``w`` and ``q3``'s
        cosine and sine.
        """
        r = rotate_cs(self.pairs.h[2], c3, s3, w)
        b_a = self.pairs.b_a
        return (b_a[0] + r[0], b_a[1] + r[1], b_a[2] + r[2])

    def _q1s_of(self, v):
        """Subproblem 2's two ``q1`` turning ``v`` onto ``d`` (``R1^T d . h2 = v . h2``), and
        whether they are exact.
        """
        h2 = self.pairs.h[1]
        return sp4_one(h2, self.d, self.minus_h1, dot3(h2, v))

    def _branches(self, q3s, w, guess):
        """``(squared distance from the first three of guess, i3, i1)`` of the four branches:
        subproblem 3's root ``i3`` among ``q3s`` (``w``: as :meth:`_arm` returns it), subproblem
        2's ``i1``.
        """
        minus_h1, h2 = self.minus_h1, self.pairs.h[1]
        for i3, q3 in enumerate(q3s):
            v = self._v(math.cos(q3), math.sin(q3), w)
            for i1, q1 in enumerate(self._q1s_of(v)[0]):
                q2 = sp1_one(v, rotate3(minus_h1, q1, self.d), h2)
                yield _distance((q1, q2, q3), guess), i3, i1

    def _angles(self, q3, q4_terms, i1):
        """``(q1, q2, q3)`` with subproblem 2's root ``i1`` at ``q3``, whether that is exact,
        and ``R5 R6 h6`` -- ``q4_terms``: the vector, ``cos q4`` and ``sin q4`` of :meth:`_arm`.
        """
        P = self.pairs
        h1, h2, h3, h4, _, _ = P.h
        w, c4, s4 = q4_terms
        c3, s3 = math.cos(q3), math.sin(q3)
        v = self._v(c3, s3, w)
        q1s, exact = self._q1s_of(v)
        q1 = q1s[i1]
        c1, s1 = math.cos(q1), -math.sin(q1)                          # of -q1
        q2 = sp1_one(v, rotate_cs(h1, c1, s1, self.d), h2)            # R2 v = R1^T d
        x = rotate_cs(h4, c4, -s4, rotate_cs(h3, c3, -s3, rotate3(h2, -q2, rotate_cs(
            h1, c1, s1, self.u))))
        return q1, q2, exact, x

    def root(self, guess):
        """``(q1, q2, q3, q4, R5 R6 h6)`` at the root of ``f = h5 . R5 R6 h6 - h5 . h6`` on the
        branch nearest ``guess`` (the six angles), from its ``q4`` by the secant method, or None.
        """
        q4 = guess[3]
        q3s, _, *terms = self._arm(q4)
        i3, i1 = min(self._branches(q3s, terms[0], guess))[1:]
        x = self._angles(q3s[i3], terms, i1)[3]
        h5 = self.pairs.h[4]
        f0 = dot3(h5, x) - self.h56
        q4_next = q4 + 1e-4
        for k in range(EVALUATIONS - 1):
            q3s, e3, *terms = self._arm(q4_next)
            q1, q2, e1, x = self._angles(q3s[i3], terms, i1)
            if not (e3 and e1) and k >= INFEASIBLE:
                return None
            f1 = dot3(h5, x) - self.h56
            if abs(f1) <= self.tolerance:
                return (q1, q2, q3s[i3], q4_next, x) if e3 and e1 else None
            if f1 == f0 or not math.isfinite(f1):
                return None
            step = -f1 * (q4_next - q4) / (f1 - f0)
            q4, f0 = q4_next, f1
            q4_next += max(-MAX_STEP, min(MAX_STEP, step))
        return None


def _distance(angles, guess):
    """The squared distance between ``angles`` and as many of ``guess``, each modulo a turn."""
    return sum(((a - b + math.pi) % _TURN - math.pi) ** 2 for a, b in zip(angles, guess))


def paired_axes(chain) -> Optional[PairedAxes]:
    """The :class:`PairedAxes` of ``chain`` (:class:`~ros_dynamics.engine.ik_chain.Chain`)
    -- six consecutive revolute joints whose axes 1 and 2, 3 and 4, 5 and 6 meet (within
    :data:`EXACT`), the joints nearest the root held first where several sixes fit, as
    :func:`~ros_dynamics.engine.ik_held.held_joints` -- or None. The three points must be
    :data:`SEPARATION` apart, the axes of each pair :data:`CROSSING` apart, and subproblem 3
    about axis 3 isolated (:func:`~.ik_analytic._isolated`).
    """
    for before, free, g in ik_held.sixes(chain, 6):
        points = [_meeting(g.h, g.o, i) for i in (0, 2, 4)]
        if any(x is None for x in points):
            continue
        a, b, c = points
        if min(np.linalg.norm(b - a), np.linalg.norm(c - b)) < SEPARATION or \
                min(np.linalg.norm(np.cross(g.h[i], g.h[i + 1])) for i in (0, 2, 4)) < CROSSING \
                or not ik_analytic._isolated(g.h[2], a - b, c - b):
            continue
        held = ik_held.hold(chain, None, np.flatnonzero(~free), before)
        w6 = ik_analytic._perpendicular(g.h[5])
        R0T = g.R0.T
        return PairedAxes(held, tuple(tuple(v) for v in g.h.tolist()), tuple(a.tolist()),
                          tuple((b - a).tolist()), tuple((a - b).tolist()),
                          tuple((c - b).tolist()), tuple((R0T @ (c - g.p0)).tolist()),
                          tuple((R0T @ g.h[5]).tolist()), tuple(w6.tolist()),
                          tuple((R0T @ w6).tolist()), tuple(np.flatnonzero(~free).tolist()),
                          tuple(np.flatnonzero(free).tolist()))
    return None


def _meeting(h, o, i):
    """The point (3,) where axes ``i`` and ``i + 1`` meet within :data:`EXACT`, else None."""
    point = ik_analytic._meet(h, o, i, i + 1)
    if point is None:
        return None
    n = np.cross(h[i], h[i + 1])
    return point if abs((o[i + 1] - o[i]) @ n) / np.linalg.norm(n) <= EXACT else None


_TURN = 2.0 * math.pi
