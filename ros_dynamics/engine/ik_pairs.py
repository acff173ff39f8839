"""Inverse kinematics of six revolute joints whose axes come in pairs, by a search over one angle,
the other five in closed form: axes meeting in pairs -- 1 and 2 in a point A, 3 and 4 in B, 5
and 6 in C (:class:`PairedAxes`) -- or axes 2 and 3 meeting in a point P and 4 and 5 parallel
(:class:`MeetingAndParallel`).

Baxter's arm has the first geometry once its first joint is held (:mod:`.ik_held` holds it and
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

G1's legs have the second (hip roll and yaw meet, knee and ankle pitch are parallel; the hip's
pitch axis and the ankle's roll axis meet neither). With ``e_i`` the joints' exponentials
(axes through points ``o_i`` at the zero configuration), ``M`` the tip's zero pose and ``G``
the target, ``e2 e3 e4 e5 e6 = e1^-1 G M^-1``; turns of joints 2 and 3 leave P in place, so
for an angle ``q1``

    ``e4 e5 e6 Y = P``, ``Y = M G^-1 e1 P``.

Turns about the parallel axes keep a point's component along them: ``q6`` keeps
``h4 . (e6 Y - o4) = h4 . (P - o4)`` (subproblem 4), ``q5`` keeps ``|e5 e6 Y - o4| = |P - o4|``
(subproblem 3), and ``q4`` turns that point onto P (subproblem 1). The rotation left,
``R2 R3 = R1^T G_R M_R^T (R4 R5 R6)^T``, is two turns about ``h2`` and ``h3`` only when
``h2 . R2 R3 h3 = h2 . h3``: ``f(q1)``, zero at the solutions of each of the four branches,
then ``q2`` and ``q3`` by subproblem 1.
"""
from dataclasses import dataclass
import math
from typing import Optional

import numpy as np

from . import ik_analytic, ik_held
from .ik_analytic import _add, _apply, _apply_t, _sub
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

        def at(q4):
            q3s, e3, *terms = self._arm(q4)
            q1, q2, e1, x = self._angles(q3s[i3], terms, i1)
            return dot3(h5, x) - self.h56, e3 and e1, (q1, q2, q3s[i3], q4, x)

        return _secant(at, q4, dot3(h5, x) - self.h56, self.tolerance)


def _secant(at, t, f0, tolerance):
    """The secant method on ``f`` from ``t`` (``f0 = f(t)``): what ``at(t)`` -- ``(f(t),
    exact, answer)`` -- answers at the first ``t`` where ``|f| <= tolerance``, or None: not
    exact there, out of reach (not exact) after :data:`INFEASIBLE` evaluations, or no such
    ``t`` within :data:`EVALUATIONS` (steps at most :data:`MAX_STEP`).
    """
    t_next = t + 1e-4
    for k in range(EVALUATIONS - 1):
        f1, exact, answer = at(t_next)
        if not exact and k >= INFEASIBLE:
            return None
        if abs(f1) <= tolerance:
            return answer if exact else None
        if f1 == f0 or not math.isfinite(f1):
            return None
        step = -f1 * (t_next - t) / (f1 - f0)
        t, f0 = t_next, f1
        t_next += max(-MAX_STEP, min(MAX_STEP, step))
    return None


@dataclass(frozen=True)
class MeetingAndParallel:
    """The six joints ``held.free`` of a chain (the others ``held``, as :class:`PairedAxes`'),
    axes 2 and 3 meeting in a point P and axes 4 and 5 parallel, as 3-tuples of floats in the
    root frame at the zero configuration: the axes ``h`` (six), points ``o`` on them (six),
    ``p`` (P), the tip's zero pose ``R0`` (rows) and ``p0``, ``w3`` a unit vector at right
    angles to axis 3; the indices ``held_index`` and ``free_index`` of the held joints and of
    the six among the chain's.
    """

    held: ik_held.HeldJoints
    h: tuple
    o: tuple
    p: tuple
    R0: tuple
    p0: tuple
    w3: tuple
    held_index: tuple
    free_index: tuple

    def solve_near(self, T_target, x_start, tolerance):
        """As :meth:`PairedAxes.solve_near`: the configuration (m floats) on the branch of
        ``x_start``'s six, at the root of ``f(q1)`` nearest it, or None.
        """
        x = x_start.tolist()
        G = self.held.turned(T_target, [x[i] for i in self.held_index])
        R, p = G[:3, :3].tolist(), G[:3, 3].tolist()
        # K = M G^-1 = (R0 R^T, p0 - R0 R^T p), R0 R^T's columns R0 times R's rows.
        columns = [_apply(self.R0, row) for row in R]
        K = tuple(zip(*columns))
        root = _LegTarget(self, K, _sub(self.p0, _apply(K, p)), ROOT * tolerance).root(
            [x[i] for i in self.free_index])
        if root is None:
            return None
        for i, q in zip(self.free_index, root):
            x[i] = q
        return x


class _LegTarget:
    """``f`` of one target for :class:`MeetingAndParallel`: ``K = M G^-1`` (a 3x3 rotation,
    rows, and a 3-tuple), its roots within ``tolerance``.
    """

    def __init__(self, axes, K_R, K_p, tolerance):
        self.axes, self.K_R, self.K_p, self.tolerance = axes, K_R, K_p, tolerance
        h, o, p = axes.h, axes.o, axes.p
        self.along = dot3(h[3], _sub(p, o[5]))                     # h4 . (P - o6)
        self.p_o4 = _sub(p, o[3])
        self.reach = math.sqrt(dot3(self.p_o4, self.p_o4))         # |P - o4|
        self.o4_o5, self.o6_o5 = _sub(o[3], o[4]), _sub(o[5], o[4])
        self.h23 = dot3(h[1], h[2])

    def _y(self, c1, s1):
        """``Y - o6`` for ``q1``'s cosine and sine."""
        h, o = self.axes.h, self.axes.o
        P1 = _add(o[0], rotate_cs(h[0], c1, s1, _sub(self.axes.p, o[0])))
        return _sub(_add(_apply(self.K_R, P1), self.K_p), o[5])

    def _q6s(self, y6):
        """Subproblem 4's two ``q6`` and whether they are exact."""
        h = self.axes.h
        return sp4_one(h[3], y6, h[5], self.along)

    def _q5s(self, q6, y6):
        """Subproblem 3's two ``q5`` at ``q6``, whether exact, and ``e6 Y - o5``."""
        h = self.axes.h
        y5 = _add(self.o6_o5, rotate3(h[5], q6, y6))
        q5s, exact = sp3_one(y5, self.o4_o5, h[4], self.reach)
        return q5s, exact, y5

    def _q4(self, q5, y5):
        """Subproblem 1's ``q4``, turning ``e5 e6 Y`` onto P."""
        h = self.axes.h
        return sp1_one(_sub(rotate3(h[4], q5, y5), self.o4_o5), self.p_o4, h[3])

    def _turned_back(self, v, c1, s1, q4, q5, q6):
        """``R1^T K_R^T R6^T R5^T R4^T v``: ``R2 R3 v`` at a solution."""
        h = self.axes.h
        for k, q in ((h[3], q4), (h[4], q5), (h[5], q6)):
            v = rotate3(k, -q, v)
        return rotate_cs(h[0], c1, -s1, _apply_t(self.K_R, v))

    def root(self, guess):
        """The six angles at the root of ``f = h2 . R2 R3 h3 - h2 . h3`` on the branch nearest
        ``guess`` (six angles), from its ``q1`` by the secant method, or None.
        """
        q1 = guess[0]
        c1, s1 = math.cos(q1), math.sin(q1)
        y6 = self._y(c1, s1)
        branches = []                                  # (distance, i6, i5, (q4, q5, q6))
        for i6, q6 in enumerate(self._q6s(y6)[0]):
            q5s, _, y5 = self._q5s(q6, y6)
            for i5, q5 in enumerate(q5s):
                q456 = (self._q4(q5, y5), q5, q6)
                branches.append((_distance(q456, guess[3:]), i6, i5, q456))
        _, i6, i5, q456 = min(branches)
        h, h3 = self.axes.h, self.axes.h[2]

        def at(q1):
            c1, s1 = math.cos(q1), math.sin(q1)
            y6 = self._y(c1, s1)
            q6s, e6 = self._q6s(y6)
            q5s, e5, y5 = self._q5s(q6s[i6], y6)
            q456 = (self._q4(q5s[i5], y5), q5s[i5], q6s[i6])
            x = self._turned_back(h3, c1, s1, *q456)
            return dot3(h[1], x) - self.h23, e6 and e5, (q1, c1, s1, q456, x)

        f0 = dot3(h[1], self._turned_back(h3, c1, s1, *q456)) - self.h23
        root = _secant(at, q1, f0, self.tolerance)
        if root is None:
            return None
        q1, c1, s1, q456, x = root
        q2 = sp1_one(h3, x, h[1])                      # R2 h3 = R2 R3 h3
        w3 = self.axes.w3
        q3 = sp1_one(w3, rotate3(h[1], -q2, self._turned_back(w3, c1, s1, *q456)), h3)
        return (q1, q2, q3) + q456


def _distance(angles, guess):
    """The squared distance between ``angles`` and as many of ``guess``, each modulo a turn."""
    return sum(((a - b + math.pi) % _TURN - math.pi) ** 2 for a, b in zip(angles, guess))


def paired_axes(chain) -> Optional[PairedAxes | MeetingAndParallel]:
    """The :class:`PairedAxes` or :class:`MeetingAndParallel` of ``chain``
    (:class:`~ros_dynamics.engine.ik_chain.Chain`), or None: six consecutive revolute joints
    -- the joints nearest the root held first where several sixes fit, as
    :func:`~ros_dynamics.engine.ik_held.held_joints` -- whose axes 1 and 2, 3 and 4, 5 and 6
    meet (within :data:`EXACT`), the three points :data:`SEPARATION` apart, the axes of each
    pair :data:`CROSSING` apart, and subproblem 3 about axis 3 isolated
    (:func:`~.ik_analytic._isolated`); else whose axes 2 and 3 meet and 4 and 5 are parallel
    (:func:`_meeting_and_parallel`).
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
    for before, free, g in ik_held.sixes(chain, 6):
        found = _meeting_and_parallel(chain, before, free, g)
        if found is not None:
            return found
    return None


def _meeting_and_parallel(chain, before, free, g):
    """The :class:`MeetingAndParallel` of the six joints ``free`` of ``chain`` (``before``
    joints before them, their :class:`~ros_dynamics.engine.ik_analytic.Geometry` ``g``), or
    None: axes 2 and 3 must meet (within :data:`EXACT`) at :data:`CROSSING` or more, axes 4 and
    5 be parallel (the sine of their angle within :data:`EXACT`) and :data:`SEPARATION` or
    more apart, P as far from axis 4, and axis 6 :data:`CROSSING` from axis 4 (subproblem 4
    about it then has isolated roots).
    """
    h, o = g.h, g.o
    p = _meeting(h, o, 1)
    if p is None or np.linalg.norm(np.cross(h[1], h[2])) < CROSSING or \
            np.linalg.norm(np.cross(h[3], h[4])) > EXACT or \
            min(np.linalg.norm(np.cross(h[3], v)) for v in (o[4] - o[3], p - o[3])) < \
            SEPARATION or np.linalg.norm(np.cross(h[3], h[5])) < CROSSING:
        return None
    held = ik_held.hold(chain, None, np.flatnonzero(~free), before)

    def floats(v):
        return tuple(v.tolist())

    return MeetingAndParallel(held, tuple(floats(v) for v in h), tuple(floats(v) for v in o),
                              floats(p), tuple(floats(r) for r in g.R0), floats(g.p0),
                              floats(ik_analytic._perpendicular(h[2])),
                              tuple(np.flatnonzero(~free).tolist()),
                              tuple(np.flatnonzero(free).tolist()))


def _meeting(h, o, i):
    """The point (3,) where axes ``i`` and ``i + 1`` meet within :data:`EXACT`, else None."""
    point = ik_analytic._meet(h, o, i, i + 1)
    if point is None:
        return None
    n = np.cross(h[i], h[i + 1])
    return point if abs((o[i + 1] - o[i]) @ n) / np.linalg.norm(n) <= EXACT else None


_TURN = 2.0 * math.pi
