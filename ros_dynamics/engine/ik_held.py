"""Analytic inverse kinematics of seven revolute joints: one end joint held at sampled angles,
the other six solved in closed form (:mod:`~ros_dynamics.engine.ik_analytic`).

A seven-joint arm (Panda, xArm7) has a one-dimensional family of solutions per pose. Holding
its first or its last joint leaves six joints whose geometry does not depend on the held angle
(the held joint only turns the targets): when they form a recognised family, every held angle
is solved in closed form, and the solutions ranked by their distance to the seed: first at the
seed's own angle (the held joint stays where it is: what a path needs), and, when several
solutions are asked for, at the angles of the seed table's configurations nearest the target
and a grid over the joint's range, in one batched call -- the sweep EAIK's and IK-Geo's users
do by hand.
"""
from dataclasses import dataclass
from functools import cached_property
import math
from typing import Optional

import numpy as np

from . import ik_analytic
from .rotations import skew

#: Held angles on the grid over the held joint's range.
GRID = 32


@dataclass(frozen=True)
class HeldJoint:
    """A seven-joint chain solved as six with joint ``held`` (0 or 6 of ``chain.moved``) held:
    ``family`` of the other six (the held joint at zero), the held joint's unit ``axis`` and a
    ``point`` on it at the zero configuration, and the tip's zero pose ``M`` (4, 4), all in the
    chain's root frame.
    """

    family: ik_analytic.Family
    held: int
    axis: np.ndarray
    point: np.ndarray
    M: np.ndarray

    def solve(self, T_target, angles):
        """Configurations (V * 8, 7) of the chain reaching ``T_target`` (4, 4) with the held
        joint at each of ``angles`` (V,), eight branches per angle, and whether each was solved
        exactly (V * 8,).
        """
        V = len(angles)
        targets = self._targets(T_target[None], np.asarray(angles, dtype=float))[0]
        Q, exact = self.family.solve(targets[:, :3, :3], targets[:, :3, 3])    # (V, 8, 6)
        X = np.insert(Q.reshape(V * 8, 6), self.held, np.repeat(angles, 8), axis=1)
        return X, exact.reshape(V * 8)

    def solve_path(self, T_targets, angle):
        """Configurations (N, 8, 7) reaching each of ``T_targets`` (N, 4, 4) with the held joint
        at ``angle``, and whether each was solved exactly (N, 8).
        """
        N = len(T_targets)
        targets = self._targets(T_targets, np.array([float(angle)]))[:, 0]
        Q, exact = self.family.solve(targets[:, :3, :3], targets[:, :3, 3])    # (N, 8, 6)
        return np.insert(Q, self.held, angle, axis=2), exact.reshape(N, 8)

    def turned(self, T_target, angle):
        """The six joints' target (4, 4) for ``T_target`` (4, 4) with the held joint at
        ``angle``.
        """
        A1, A2 = self._generators
        turn = A1 * -math.sin(angle) + A2 * (1.0 - math.cos(angle))
        turn += _I4
        return turn.dot(T_target) if self.held == 0 else T_target.dot(turn)

    def _targets(self, T_targets, angles):
        """The six joints' targets (N, V, 4, 4) for ``T_targets`` (N, 4, 4) with the held
        joint at ``angles`` (V,).
        """
        A1, A2 = self._generators
        turn = _I4 - np.sin(angles)[:, None, None] * A1 \
            + (1.0 - np.cos(angles))[:, None, None] * A2          # (V, 4, 4)
        if self.held == 0:
            return turn[None] @ T_targets[:, None]
        return T_targets[:, None] @ turn[None]

    @cached_property
    def _generators(self):
        """``(A1, A2)`` (4, 4) each: the held joint turned by ``-angle`` is the transform
        ``I + sin(-angle) S + (1 - cos(-angle)) S^2`` (Rodrigues' formula for the twist ``S``
        of a turn about the axis through the point); for the last joint held, read in the
        tip's zero frame (``M^-1 S M``), where it multiplies the target from the right.
        """
        S = np.zeros((4, 4))
        S[:3, :3] = skew(self.axis)
        S[:3, 3] = -S[:3, :3] @ self.point
        S2 = S @ S
        if self.held == 0:
            return S, S2
        M_inverse = np.linalg.inv(self.M)
        return M_inverse @ S @ self.M, M_inverse @ S2 @ self.M


_I4 = np.eye(4)


def held_joint(chain) -> Optional[HeldJoint]:
    """The :class:`HeldJoint` of ``chain`` (:class:`~ros_dynamics.engine.ik_chain.Chain`) --
    its last joint held, else its first -- or None unless seven revolute joints move it and one
    of those leaves a recognised family.
    """
    n = len(chain.moved)
    if n != 7 or chain.mimic or not chain.pure_rotation or chain.uses_x_term:
        return None
    for held in (6, 0):
        active = np.ones(n, dtype=bool)
        active[held] = False
        g = ik_analytic.geometry(chain, np.zeros(n), active)
        family = ik_analytic.classify(g) if g is not None else None
        if family is not None:
            frames = chain._frames(np.zeros((1, n)))[0][0]
            M = np.eye(4)
            M[:3, :3], M[:3, 3] = g.R0, g.p0
            return HeldJoint(family, held, frames[held, :3, 2].copy(),
                             frames[held, :3, 3].copy(), M)
    return None


def held_angles(held, x_seed, lower, upper, neighbours):
    """The held joint's angles to try (V,): the seed's, the neighbours' (k, 7) and
    :data:`GRID` over ``[lower, upper]`` of the held joint (a turn when unbounded).
    """
    j = held.held
    lo, hi = lower[j], upper[j]
    if not np.isfinite(lo) or not np.isfinite(hi):
        lo, hi = x_seed[j] - np.pi, x_seed[j] + np.pi
    grid = np.linspace(lo, hi, GRID)
    return np.concatenate([[x_seed[j]], neighbours[:, j], grid])
