"""Analytic inverse kinematics of chains of more than six joints: the joints before and after
six revolute ones held at given values, those six solved in closed form
(:mod:`~ros_dynamics.engine.ik_analytic`).

A seven-joint arm (Panda, xArm7) has a one-dimensional family of solutions per pose; an arm on
a torso (TALOS's, TIAGo's) more. Holding the joints at the ends of the chain -- the torso and
the shoulder's first joint of TALOS's and TIAGo's, the first joint of a seven-joint arm whose
last six fit a family, else its last (Panda, xArm7) -- leaves six joints whose geometry does
not depend on the held values: by the product of exponentials,
``T(q) = A(v_before) G(q_six) E(v_after)`` with ``G`` the six joints' chain at the held joints'
zero, ``A`` the held joints before them (their twists in the root frame) and ``E``
those after (their twists in the tip's zero frame). The held joints only turn (or, sliding,
shift) the target: ``G(q_six) = A^-1 T_target E^-1``. When the six form a recognised family,
every set of held values is solved in closed form, and the solutions ranked by their distance
to the seed: at the seed's own values (the held joints stay where they are: what a path needs)
or the values of the seed table's configurations nearest the target, and, when several
solutions are asked for, those and a grid over a single held joint's range, in one batched call
-- the sweep EAIK's and IK-Geo's users do by hand. A spherical shoulder's held joint
(:class:`Shoulder`) knows the angles that reach a target in closed form.
"""
from dataclasses import dataclass, replace
from functools import cached_property
import math
from typing import Optional

import numpy as np

from . import ik_analytic
from .rotations import skew
from .subproblems import dot3, rotate3, sp3_one

#: Held values on the grid over a single held joint's range.
GRID = 32

#: [m] A held joint's axis this near the point where the six's first two axes meet passes
#: through it (:class:`Shoulder`).
THROUGH = 1e-9

#: [rad] A shoulder's held value nearest the seed is taken this far inside its interval (at
#: most a quarter of the interval): at the interval's ends the shoulder's two branches meet.
INSIDE = 0.05

_I4 = np.eye(4)


@dataclass(frozen=True)
class HeldJoints:
    """A chain of ``m`` > 6 joints (``chain.moved``) solved as six with the others held:
    ``family`` of the six (the held joints at zero; None when another solver takes them,
    :mod:`~ros_dynamics.engine.ik_pairs`); ``before`` held joints come first, the
    rest of ``held`` (h,) (indices into ``chain.moved``) after the six. Per held joint its twist
    ``twists`` (h, 4, 4) at the zero configuration -- in the root frame for those before, in
    the tip's zero frame for those after -- and its square ``twists2`` (h, 4, 4); ``slides``
    (h,): a prismatic joint (its twist squares to zero).
    """

    family: ik_analytic.Family
    held: np.ndarray
    before: int
    twists: np.ndarray
    twists2: np.ndarray
    slides: tuple
    #: The :class:`Shoulder` of the last held joint before the six, when it is one; else None.
    shoulder: Optional['Shoulder'] = None

    @cached_property
    def free(self) -> np.ndarray:
        """(m,) bool, read-only: the six joints the family solves."""
        free = np.ones(len(self.held) + 6, dtype=bool)
        free[self.held] = False
        free.flags.writeable = False
        return free

    def reaching(self, T_target, values, lower, upper):
        """``values`` (a tuple of floats, one per held joint) with the :attr:`shoulder`'s
        replaced by each of :meth:`Shoulder.values` -- its angles nearest its value there that
        reach ``T_target`` (4, 4) with the other held joints at theirs, inside its limits
        ``[lower, upper]`` -- nearest first (none without a shoulder or out of reach).
        """
        if self.shoulder is None:
            return []
        k = self.before - 1
        others = values[:k] + (0.0,) + values[k + 1:]
        return [values[:k] + (v,) + values[k + 1:] for v in self.shoulder.values(
            self.turned(T_target, others), values[k], lower, upper)]

    def solve(self, T_target, values):
        """Configurations (V * 8, m) of the chain reaching ``T_target`` (4, 4) with the held
        joints at each row of ``values`` (V, h), eight branches per row, and whether each was
        solved exactly (V * 8,).
        """
        V = len(values)
        targets = self._targets(T_target[None], values)[0]                    # (V, 4, 4)
        Q, exact = self.family.solve(targets[:, :3, :3], targets[:, :3, 3])    # (V, 8, 6)
        X = np.empty((V, 8, len(self.held) + 6))
        X[..., self.free] = Q
        X[..., self.held] = values[:, None]
        return X.reshape(V * 8, -1), exact.reshape(V * 8)

    def solve_path(self, T_targets, values):
        """Configurations (N, 8, m) reaching each of ``T_targets`` (N, 4, 4) with the held
        joints at ``values`` (h,), and whether each was solved exactly (N, 8).
        """
        N = len(T_targets)
        targets = self._targets(T_targets, np.asarray(values, dtype=float)[None])[:, 0]
        Q, exact = self.family.solve(targets[:, :3, :3], targets[:, :3, 3])    # (N, 8, 6)
        X = np.empty((N, 8, len(self.held) + 6))
        X[..., self.free] = Q
        X[..., self.held] = values
        return X, exact

    def turned(self, T_target, values):
        """The six joints' target (4, 4) for ``T_target`` (4, 4) with the held joints at
        ``values`` (h floats): :meth:`_targets` for one target and one set of values, each
        held joint's factor one product with its :attr:`_step_basis` (7.4 us against 12.3 for
        four held joints as four array sums each, 2.3 against 4.6 for one).
        """
        before = after = None
        for i, (v, slide, basis) in enumerate(zip(values, self.slides, self._step_basis)):
            terms = (1.0, v, 0.0) if slide else (1.0, math.sin(v), 1.0 - math.cos(v))
            step = np.dot(terms, basis).reshape(4, 4)
            if i < self.before:
                before = step if before is None else step.dot(before)
            else:
                after = step if after is None else step.dot(after)
        T = T_target.copy() if before is None else before.dot(T_target)
        return T if after is None else T.dot(after)

    @cached_property
    def _step_basis(self) -> np.ndarray:
        """(h, 3, 16), read-only: each held joint's ``[I, -S, S^2]`` (flattened), whose
        combination by ``(1, sin(v), 1 - cos(v))`` is the factor ``exp(-S v)`` of a turn, by
        ``(1, v, 0)`` that of a slide (:meth:`_targets`).
        """
        basis = np.stack([np.broadcast_to(_I4, self.twists.shape), -self.twists,
                          self.twists2], axis=1).reshape(len(self.held), 3, 16)
        basis.flags.writeable = False
        return basis

    def _targets(self, T_targets, values):
        """The six joints' targets (N, V, 4, 4) for ``T_targets`` (N, 4, 4) with the held
        joints at ``values`` (V, h): ``A^-1 T E^-1`` (see the module docstring), each factor
        ``exp(-S v) = I - sin(v) S + (1 - cos(v)) S^2`` for a turn (Rodrigues' formula for the
        twist ``S``), ``I - v S`` for a slide, the later joints' on the left.
        """
        V = len(values)
        before = np.broadcast_to(_I4, (V, 4, 4))
        after = before
        for i in range(len(self.held)):
            v = values[:, i, None, None]
            if self.slides[i]:
                step = _I4 - v * self.twists[i]
            else:
                step = _I4 - np.sin(v) * self.twists[i] + (1.0 - np.cos(v)) * self.twists2[i]
            if i < self.before:
                before = step @ before
            else:
                after = step @ after
        return before[None] @ T_targets[:, None] @ after[None]


def held_joints(chain) -> Optional[HeldJoints]:
    """The :class:`HeldJoints` of ``chain`` (:class:`~ros_dynamics.engine.ik_chain.Chain`) --
    the last six joints solved (the others held before them), else the six before the last one
    held, and so on -- or None unless more than six joints move it, no mimic joint couples
    them, and six consecutive revolute ones form a recognised family.

    Joints nearest the root are held first: where several sixes fit, the seed table's
    neighbours' values of a torso's or a shoulder's first joints answer more targets in closed
    form than a wrist's (400 random targets, seeds mid-range: the iiwa holding its first joint
    368 against 352 holding its last, 0.23 ms against 0.26; the simple humanoid's arm holding
    its waist and shoulder pitch 318 against 282 holding two waist and two wrist joints;
    Romeo's arm 258 against 249).
    """
    for before, free, g in sixes(chain, 7):
        family = ik_analytic.classify(g)
        if family is not None:
            return hold(chain, family, np.flatnonzero(~free), before)
    return None


def sixes(chain, least):
    """``(before, free, geometry)`` of each six consecutive revolute joints of ``chain`` --
    ``before`` joints before them, ``free`` (m, bool) marking them, their
    :class:`~ros_dynamics.engine.ik_analytic.Geometry` with the others at zero -- the six
    farthest from the root first (the joints nearest it held first); none when fewer than
    ``least`` joints move the chain or a mimic joint couples them.
    """
    m = len(chain.moved)
    if m < least or chain.mimic:
        return
    zeros = np.zeros(m)
    for before in reversed(range(m - 5)):
        free = np.zeros(m, dtype=bool)
        free[before:before + 6] = True
        g = ik_analytic.geometry(chain, zeros, free)
        if g is not None:
            yield before, free, g


def hold(chain, family, held, before):
    """:class:`HeldJoints` of ``family`` (None: the six are solved otherwise, as by
    :mod:`~ros_dynamics.engine.ik_pairs`) with the joints ``held`` (h,), ``before`` of them
    first: their twists from the joint frames at the zero configuration.
    """
    frames, tip = chain._frames(np.zeros((1, len(chain.moved))))
    frames, M = frames[0], tip[0]
    M_inverse = np.linalg.inv(M)
    slides = tuple(bool(chain.linear[j, 0]) for j in held)
    twists = np.zeros((len(held), 4, 4))
    for i, j in enumerate(held):
        axis, point = frames[j, :3, 2], frames[j, :3, 3]
        if slides[i]:
            twists[i, :3, 3] = axis
        else:
            twists[i, :3, :3] = skew(axis)
            twists[i, :3, 3] = -twists[i, :3, :3] @ point
        if i >= before:                         # after the six: in the tip's zero frame
            twists[i] = M_inverse @ twists[i] @ M
    for array in (held, twists):
        array.setflags(write=False)
    if family is not None and len(held) > before and family.turned:
        # Held joints after the six turn the tip about their own axes: a snapping's turn of
        # the six (Family.tilt) then moves it by that lever too, which the six's bound
        # (Family.drift) leaves out -- its solutions are checked (a UR5 calibrated by 1e-6 rad
        # with a joint 1 m past its tool was answered up to 1.3e-5 m off).
        family = replace(family, drift=math.inf)
    shoulder = None
    if family is not None and before and not slides[before - 1]:     # the last held before
        j = held[before - 1]
        shoulder = Shoulder.of(family, frames[j, :3, 2], frames[j, :3, 3])
    return HeldJoints(family, held, before, twists, twists @ twists, slides, shoulder)


@dataclass(frozen=True)
class Shoulder:
    """The last held joint before six joints of the spherical wrist's family whose first two
    axes meet (the iiwa's first joint: its first three axes meet; Romeo's shoulder pitch after
    its trunk's yaw), the held joint's axis ``axis`` (3-tuple, root frame, the zero
    configuration) through that point: turning it turns the wrist centre about the point, at a
    fixed distance (the other held joints' turns taken out of the target first). That distance
    fixes the elbow (subproblem 3), and the six's first two joints can then reach the wrist
    centre only while its component along their first axis lies in an interval -- a sinusoid
    of the held angle: the held angles that reach a target are intervals known in closed form
    (:meth:`reaching`), where the seed table's neighbours' values miss about a third of the time
    (the iiwa, 1,000 random targets: 279 first neighbours with no solution, 85 targets none of
    four with one in the limits).
    """

    axis: tuple
    family: ik_analytic.Family

    @classmethod
    def of(cls, family, axis, point):
        """The :class:`Shoulder` of a held joint of unit ``axis`` (3,) through ``point`` (3,)
        (root frame, zero configuration) before the six of ``family``, or None.
        """
        if family.name != 'spherical_wrist' or family.shoulder != 'meeting' or \
                family.geometry.reversed:
            return None
        offset = family.geometry.o[0] - point
        if np.linalg.norm(offset - (offset @ axis) * axis) > THROUGH:
            return None
        return cls(tuple(axis.tolist()), family)

    def reaching(self, T_target):
        """Intervals ``(lower, upper)`` [rad] of the held angle at which the six reach
        ``T_target`` (4, 4) exactly (an interval may extend past a turn; none: out of reach), the
        other held joints' turns taken out of it (:meth:`HeldJoints.reaching`).

        With the held angle ``v``, the wrist centre relative to the meeting point is
        ``c = rot(H, -v) d``; subproblem 2 (``rot(k1, t1) c = rot(k2, t2) u``, ``k1 = -h1``,
        ``k2 = h2``, ``u`` the elbow's for each root of subproblem 3) has a solution exactly
        when ``x`` with ``k1 . x = k1 . c``, ``k2 . x = k2 . u`` and ``|x| = |c|`` exists:
        ``a^2 - 2 g a b + b^2 <= |c|^2 (1 - g^2)`` with ``a = k1 . c``, ``b = k2 . u``,
        ``g = k1 . k2`` -- ``a`` in an interval, and ``a = A cos v + B sin v + D``.
        """
        v = self.family._vectors
        h1, h2, h3 = v['h'][:3]
        _, p23, p3c = v['p'][:3]
        R, p = T_target[:3, :3].tolist(), T_target[:3, 3].tolist()
        w0, o = v['w0'], v['p01']
        d = tuple(p[i] - dot3(R[i], w0) - o[i] for i in range(3))    # wrist centre - point
        r2 = dot3(d, d)
        elbows, exact = sp3_one(p3c, tuple(-x for x in p23), h3, math.sqrt(r2))
        if not exact:
            return []
        H, k1, k2 = self.axis, tuple(-x for x in h1), h2
        hk, hd = dot3(H, k1), dot3(H, d)
        Hk1 = (H[1] * k1[2] - H[2] * k1[1], H[2] * k1[0] - H[0] * k1[2],
               H[0] * k1[1] - H[1] * k1[0])
        A, B, D = dot3(k1, d) - hk * hd, dot3(Hk1, d), hk * hd
        M, phi, g = math.hypot(A, B), math.atan2(B, A), dot3(k1, k2)
        out, seen = [], []
        for q3 in elbows:
            u = rotate3(h3, q3, p3c)
            b = dot3(k2, tuple(p23[i] + u[i] for i in range(3)))
            spread = (1.0 - g * g) * (r2 - b * b)
            if spread < 0.0 or any(abs(b - c) <= 1e-12 for c in seen):  # the elbow's other
                continue                                                   # root, the same b
            seen.append(b)
            a_lo, a_hi = g * b - math.sqrt(spread), g * b + math.sqrt(spread)
            if M < 1e-12:                  # the held angle does not move a
                if a_lo <= D <= a_hi:
                    out.append((phi - math.pi, phi + math.pi))
                continue
            c_lo, c_hi = (a_lo - D) / M, (a_hi - D) / M
            if c_lo > 1.0 or c_hi < -1.0:
                continue
            near, far = math.acos(min(1.0, c_hi)), math.acos(max(-1.0, c_lo))
            out += [(phi + near, phi + far), (phi - far, phi - near)]
        return out

    def values(self, T_target, seed, lower, upper):
        """Held values (floats) that reach ``T_target`` (4, 4): in each interval of
        :meth:`reaching` inside the joint's limits ``[lower, upper]`` (unbounded: within a half
        turn of the seed), the one nearest the ``seed``'s value (at least :data:`INSIDE` inside
        it, at most a quarter of its width), nearest the seed first.
        """
        if not (math.isfinite(lower) and math.isfinite(upper)):
            lower, upper = seed - math.pi, seed + math.pi
        turn = 2.0 * math.pi
        found = []
        for lo, hi in self.reaching(T_target):
            shift = turn * round((seed - 0.5 * (lo + hi)) / turn)
            for k in (-1, 0, 1):
                a, b = max(lo + shift + k * turn, lower), min(hi + shift + k * turn, upper)
                if b < a:
                    continue
                inside = min(INSIDE, 0.25 * (b - a))
                value = min(max(seed, a + inside), b - inside)
                if all(abs(value - f) > 1e-9 for f in found):
                    found.append(value)
        return sorted(found, key=lambda value: abs(value - seed))


def held_values(held, x_seed, lower, upper, neighbours):
    """The held joints' values to try (V, h): the seed's, the neighbours' (k, m) and, for a
    single held joint, :data:`GRID` over its ``[lower, upper]`` (a turn when unbounded).
    """
    rows = [x_seed[held.held][None], neighbours[:, held.held]]
    if len(held.held) == 1:
        j = held.held[0]
        lo, hi = lower[j], upper[j]
        if not np.isfinite(lo) or not np.isfinite(hi):
            lo, hi = x_seed[j] - np.pi, x_seed[j] + np.pi
        rows.append(np.linspace(lo, hi, GRID)[:, None])
    return np.concatenate(rows)
