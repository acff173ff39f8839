"""Numerical inverse kinematics of a model: :class:`IKSolver` and :class:`IKResult`.

An :class:`IKSolver` holds what a model's IK keeps between solves -- one
:class:`~ros_dynamics.engine.ik_chain.Chain` and at most one seed table
(:mod:`~ros_dynamics.engine.ik_seeds`) per tip frame -- and is safe to share between threads.
A solve validates its request (typed errors naming the argument, every number bounded), runs the
search of :mod:`~ros_dynamics.engine.ik_search` until the deadline (monotonic clock) and reports
the outcome: only a configuration whose errors are within both tolerances is a success;
otherwise the best one found is returned with ``success=False``.
"""
from dataclasses import dataclass, field
import math
import threading
import time
from typing import Optional

import numpy as np

from . import configuration, kinematics
from .exceptions import InvalidInputError, ShapeError
from .ik_chain import Chain
from .ik_search import Search
from .ik_seeds import SeedTable
from .spatial import inverse_transform

_EYE3 = np.eye(3)


@dataclass
class IKResult:
    """Outcome of :func:`solve_ik`.

    q (nq,): the solution (success) or the best configuration found; success: both errors within
    tolerance; position_error [m], orientation_error [rad] of ``q``; iterations: over all
    attempts; attempts: seeds tried; timed_out: the deadline stopped the search; message;
    solutions: distinct converged configurations ranked by distance to the seed (``q`` first).
    """

    q: np.ndarray
    success: bool
    position_error: float
    orientation_error: float
    iterations: int
    attempts: int
    message: str
    timed_out: bool = False
    solutions: list = field(default_factory=list)


#: Largest tolerance accepted [m or rad]: beyond it every configuration would be a solution.
MAX_TOLERANCE = 10.0
#: Most distinct solutions one solve collects.
MAX_SOLUTIONS = 1000


def _check(model, tip_frame, T_target, q_seed, position_tolerance, orientation_tolerance,
           weights, max_solutions):
    model.frame_index(tip_frame)
    T_target = kinematics.as_finite_array(T_target, 'T_target')
    if T_target.shape != (4, 4):
        raise ShapeError(f'T_target: expected a 4x4 transform, got shape {T_target.shape}')
    R = T_target[:3, :3]
    (a, b, c), (d, e, f), (g, h, i) = R.tolist()
    det = a * (e * i - f * h) - b * (d * i - f * g) + c * (d * h - e * g)   # in floats: fast
    if np.abs(R @ R.T - _EYE3).max() > 1e-6 or det < 0:
        raise InvalidInputError('T_target: the rotation part is not a rotation matrix')
    if q_seed is None:
        q_seed = configuration.middle_configuration(model)
    q_seed = kinematics.as_configuration(model, q_seed, 'q_seed')
    if q_seed.ndim != 1:
        raise ShapeError(f'q_seed: expected shape ({model.nq},), got {q_seed.shape}')
    _check_tolerance('position_tolerance', position_tolerance)
    _check_tolerance('orientation_tolerance', orientation_tolerance)
    if not (isinstance(max_solutions, (int, np.integer)) and 1 <= max_solutions <= MAX_SOLUTIONS):
        raise InvalidInputError(f'max_solutions: expected a whole number in 1..{MAX_SOLUTIONS}, '
                                f'got {max_solutions!r}')
    if weights is None:
        return T_target, q_seed.copy(), None
    w = kinematics.as_finite_array(weights, 'weights')
    if w.shape != (6,) or np.any(w < 0) or not np.any(w > 0) or np.any(w > 1e6):
        raise InvalidInputError('weights: expected 6 values in [0, 1e6] (x, y, z, rx, ry, rz), '
                                f'not all zero, got {w.tolist()}')
    return T_target, q_seed.copy(), w.copy()


def _check_tolerance(name, tol):
    if not isinstance(tol, (float, int, np.floating, np.integer)):   # scalars: no array
        tol = kinematics.as_finite_array(tol, name)
        if tol.shape != ():
            raise InvalidInputError(f'{name}: expected a value in (0, {MAX_TOLERANCE:g}], got '
                                    f'{tol.tolist()}')
    if not 0 < tol <= MAX_TOLERANCE:        # NaN fails too
        raise InvalidInputError(f'{name}: expected a value in (0, {MAX_TOLERANCE:g}], got '
                                f'{tol!r:.40}')


class IKSolver:
    """Inverse kinematics of one :class:`~ros_dynamics.engine.model.Model`.

    Owns the :class:`~ros_dynamics.engine.ik_chain.Chain` of every tip frame it has solved for
    (built on first use) and the seed tables :meth:`prepare` built; both are immutable once
    built, and the dictionaries holding them change under a lock, so one solver can serve
    several threads. Nothing is written to the model.
    """

    def __init__(self, model):
        self.model = model
        self._lock = threading.Lock()
        self._chains: dict[str, Chain] = {}
        self._tables: dict[str, SeedTable] = {}

    def chain(self, frame: str) -> Chain:
        """The chain of ``frame`` (built once, then kept)."""
        name = self.model.frame_names[self.model.frame_index(frame)]
        with self._lock:
            chain = self._chains.get(name)
        if chain is None:
            chain = Chain(self.model, name)
            with self._lock:
                chain = self._chains.setdefault(name, chain)
        return chain

    def prepare(self, frame: str, samples: int = 20000, rng=0) -> SeedTable:
        """Build (or rebuild) the seed table of ``frame`` (:mod:`~ros_dynamics.engine.ik_seeds`):
        ``samples`` configurations inside the limits indexed by the frame's pose, from which
        later :meth:`solve` calls start next to their targets. A one-time cost (16-30 ms and
        about 3 MB for 20,000 samples of the benchmark's 6- to 9-joint arms) that makes most
        solves about twice as fast and rarely-solved targets reliable. ``rng``: seed or
        generator of the samples.
        """
        if not (isinstance(samples, (int, np.integer)) and 1 <= samples <= MAX_SEED_SAMPLES):
            raise InvalidInputError(f'samples: expected a whole number in 1..{MAX_SEED_SAMPLES}, '
                                    f'got {samples!r}')
        chain = self.chain(frame)
        table = SeedTable(chain, chain.lower, chain.upper, int(samples),
                          np.random.default_rng(rng))
        name = self.model.frame_names[self.model.frame_index(frame)]
        with self._lock:
            self._tables[name] = table
        return table

    def seed_table(self, frame: str) -> Optional[SeedTable]:
        """The seed table :meth:`prepare` built for ``frame``, or None."""
        with self._lock:
            return self._tables.get(frame)

    def solve(self, tip_frame: str, T_target, q_seed=None, *, position_tolerance: float = 1e-05,
              orientation_tolerance: float = 1e-05, position_only: bool = False, weights=None,
              timeout: float = 0.005, max_solutions: int = 1, active_joints=None,
              rng=None) -> 'IKResult':
        """Joint positions that put ``tip_frame`` at ``T_target`` (4x4, ``T_world_tip``).

        ``q_seed`` (nq,): where the search starts and what the solutions stay close to
        (default: the middle of the limits). Only one-DOF joints move: a floating or planar
        joint above the tip (a floating base) stays where the seed puts it. Tolerances in [m]
        and [rad]; ``position_only`` ignores orientation; ``weights`` (6,) weigh the error rows
        (x, y, z, rx, ry, rz); ``timeout`` [s] of wall-clock time (at most
        :data:`MAX_TIMEOUT`); ``max_solutions`` distinct solutions are collected before
        returning; ``active_joints``: names of the joints the solver may move (default: every
        joint that moves the tip), the others keep the seed's values; ``rng``: a seed or
        ``numpy.random.Generator`` for the restarts. See :class:`IKResult`.
        """
        model = self.model
        deadline = time.monotonic() + _seconds(timeout)
        T_target, q_seed, w = _check(model, tip_frame, T_target, q_seed, position_tolerance,
                                     orientation_tolerance, weights, max_solutions)
        if position_only:
            w = np.ones(6) if w is None else w
            w[3:] = 0.0
        chain = self.chain(tip_frame)
        if chain.root_body:        # below a floating base: the target in the base's frame
            T_world_root = kinematics.forward_kinematics(model, q_seed).T_world_body[
                chain.root_body]
            T_target = inverse_transform(T_world_root) @ T_target
        active = _active_mask(model, chain, active_joints)
        search = Search(model, chain, self.seed_table(tip_frame), T_target, q_seed, w,
                         position_tolerance, orientation_tolerance, position_only, rng, active)
        return _result(search, deadline, q_seed, int(max_solutions))


#: Most seed-table samples :meth:`IKSolver.prepare` takes (about 150 MB for a 7-joint arm).
MAX_SEED_SAMPLES = 1_000_000
#: Longest time budget [s] of one solve.
MAX_TIMEOUT = 60.0


def _seconds(timeout):
    try:
        t = float(timeout)
    except (TypeError, ValueError, OverflowError):
        raise InvalidInputError(f'timeout: expected seconds, got {timeout!r}') from None
    if not (math.isfinite(t) and 0 < t <= MAX_TIMEOUT):
        raise InvalidInputError(f'timeout: expected a number of seconds in (0, {MAX_TIMEOUT:g}],'
                                f' got {timeout!r}')
    return t


def _active_mask(model, chain, active_joints):
    """Per joint of ``chain.moved``: True where the solver may move it."""
    if active_joints is None:
        return None
    names = list(active_joints)
    for name in names:
        model.joint_index(name)
    moved_names = [model.q_names[i] for i in chain.moved]
    mask = np.array([n in set(names) for n in moved_names], dtype=bool)
    if not mask.any():
        raise InvalidInputError(f'active_joints: none of {names} moves the tip; the joints that '
                                f'do: {moved_names}')
    return mask


def _result(search, deadline, q_seed, max_solutions):
    """Run ``search`` until ``deadline`` and turn its outcome into an :class:`IKResult`."""
    timed_out = search.run(deadline, max_solutions)
    found = sorted(search.found, key=lambda s: np.linalg.norm(s[0] - q_seed))
    found = found[:max_solutions]
    if found:
        q, p_err, o_err = found[0]
        message = f'converged ({len(found)} solution(s), {search.attempts} attempt(s))'
        return IKResult(q, True, p_err, o_err, search.iterations, search.attempts, message,
                        timed_out, [s[0] for s in found])
    x, p_err, o_err = search.best()
    q = search.q(x)
    why = 'timed out' if timed_out else 'stopped'
    message = (f'{why} after {search.attempts} attempt(s), {search.iterations} iteration(s) '
               f'without reaching the tolerances; best position error {p_err:.3g} m, '
               f'orientation error {o_err:.3g} rad')
    return IKResult(q, False, p_err, o_err, search.iterations, search.attempts,
                    message, timed_out, [])


