"""Numerical inverse kinematics: damped least squares with batched random restarts.

Iteration (Levenberg-Marquardt with Sugihara's damping, *Solvability-unconcerned inverse
kinematics by the Levenberg-Marquardt method*, 2011): with the pose error
``e = [p_target - p; log(R_target R^T)]`` (world axes), the weights ``W`` and
``E = e^T W e / 2``, each step solves ``(J^T W J + (E + lambda_0) I) dq = J^T W e`` -- the damping
grows with the error, so steps stay short far from the target and near singularities, and
vanish at convergence (quadratic convergence). Every iterate is clipped into the joint limits
(continuous joints are unbounded). For redundant arms the step also moves toward the seed inside
the null space of the task, so solutions stay close to where the robot is.

Restarts: the seed first, then random configurations inside the limits, several advanced
together in one vectorised iteration, until the deadline (monotonic clock). Only a configuration
whose errors are within both tolerances is a success; otherwise the best one found is returned
with ``success=False``.
"""
from dataclasses import dataclass, field
import time

import numpy as np

from . import jacobians, kinematics
from .exceptions import InvalidInputError, ShapeError
from .rotations import log_so3

_LAMBDA0 = 1e-6          # damping floor
_DAMPING = 0.1           # damping = _DAMPING * E + _LAMBDA0
_MAX_ITERATIONS = 20     # per attempt, before a restart
_STALL = 4               # iterations without a 0.1 % improvement before a restart
_BATCH = 6               # restarts advanced together
_NULLSPACE_GAIN = 0.3
_DISTINCT = 1e-3         # [rad or m] solutions closer than this are the same


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


_AXIS_A = ([2, 0, 1], [1, 2, 0])
_AXIS_B = ([1, 2, 0], [2, 0, 1])
_DIAG = ([0, 1, 2], [0, 1, 2])


def pose_error(T, T_target):
    """Error ``[p_target - p; log(R_target R^T)]`` (..., 6) in world axes."""
    dp = T_target[:3, 3] - T[..., :3, 3]
    dR = T_target[:3, :3] @ np.swapaxes(T[..., :3, :3], -1, -2)
    # log(dR) from its skew part sin(t) * axis; the full log only for angles near pi.
    s = 0.5 * (dR[..., _AXIS_A[0], _AXIS_A[1]] - dR[..., _AXIS_B[0], _AXIS_B[1]])
    cos_t = 0.5 * (dR[..., _DIAG[0], _DIAG[1]].sum(axis=-1) - 1.0)
    if np.all(cos_t > -0.9):
        sin_t = np.sqrt((s * s).sum(axis=-1))
        theta = np.arctan2(sin_t, cos_t)
        w = s * np.where(sin_t > 1e-300, theta / np.maximum(sin_t, 1e-300), 1.0)[..., None]
    else:
        w = log_so3(dR)
    return np.concatenate([dp, w], axis=-1)


def _check(model, tip_frame, T_target, q_seed, position_tolerance, orientation_tolerance,
           weights, timeout, max_solutions):
    model.frame_index(tip_frame)
    T_target = np.asarray(T_target, dtype=float)
    if T_target.shape != (4, 4):
        raise ShapeError(f'T_target: expected a 4x4 transform, got shape {T_target.shape}')
    if not np.all(np.isfinite(T_target)):
        raise InvalidInputError('T_target: expected finite values')
    R = T_target[:3, :3]
    if np.abs(R @ R.T - np.eye(3)).max() > 1e-6 or np.linalg.det(R) < 0:
        raise InvalidInputError('T_target: the rotation part is not a rotation matrix')
    if q_seed is None:
        q_seed = model.middle_configuration()
    q_seed = kinematics.as_joint_vector(model, q_seed, 'q_seed')
    if q_seed.ndim != 1:
        raise ShapeError(f'q_seed: expected shape ({model.nq},), got {q_seed.shape}')
    for name, tol in (('position_tolerance', position_tolerance),
                      ('orientation_tolerance', orientation_tolerance)):
        if not (np.isfinite(tol) and tol > 0):
            raise InvalidInputError(f'{name}: expected a finite value > 0, got {tol}')
    if not (np.isfinite(timeout) and timeout > 0):
        raise InvalidInputError(f'timeout: expected a finite number of seconds > 0, got {timeout}')
    if int(max_solutions) < 1:
        raise InvalidInputError(f'max_solutions: expected >= 1, got {max_solutions}')
    w = np.ones(6) if weights is None else np.asarray(weights, dtype=float)
    if w.shape != (6,) or not np.all(np.isfinite(w)) or np.any(w < 0) or not np.any(w > 0):
        raise InvalidInputError('weights: expected 6 finite values >= 0 (x, y, z, rx, ry, rz), '
                                f'not all zero, got {np.asarray(weights).tolist()}')
    return T_target, q_seed.copy(), w


def solve_ik(model, tip_frame, T_target, q_seed=None, *, position_tolerance=1e-5,
             orientation_tolerance=1e-5, position_only=False, weights=None, timeout=0.005,
             max_solutions=1, rng=None):
    """Joint positions that put ``tip_frame`` at ``T_target`` (4x4, in the root frame).

    ``q_seed`` (nq,): where the search starts and what the solutions stay close to (default:
    the middle of the limits). Tolerances in [m] and [rad]; ``position_only`` ignores
    orientation; ``weights`` (6,) weigh the error rows (x, y, z, rx, ry, rz); ``timeout`` [s] of
    wall-clock time; ``max_solutions`` distinct solutions are collected before returning;
    ``rng``: a seed or ``numpy.random.Generator`` for the restarts. See :class:`IKResult`.
    """
    deadline = time.monotonic() + float(timeout)
    T_target, q_seed, w = _check(model, tip_frame, T_target, q_seed, position_tolerance,
                                 orientation_tolerance, weights, timeout, max_solutions)
    if position_only:
        w[3:] = 0.0
    search = _Search(model, tip_frame, T_target, q_seed, w, position_tolerance,
                     orientation_tolerance, position_only, np.random.default_rng(rng))
    timed_out = search.run(deadline, int(max_solutions))
    found = sorted(search.found, key=lambda s: np.linalg.norm(s[0] - q_seed))
    if found:
        q, p_err, o_err = found[0]
        message = f'converged ({len(found)} solution(s), {search.attempts} attempt(s))'
        return IKResult(q, True, p_err, o_err, search.iterations, search.attempts, message,
                        timed_out, [s[0] for s in found])
    _, q, p_err, o_err = search.best
    q = _near_seed(q, q_seed, model.continuous)
    why = 'timed out' if timed_out else 'stopped'
    message = (f'{why} after {search.attempts} attempt(s), {search.iterations} iteration(s) '
               f'without reaching the tolerances; best position error {p_err:.3g} m, '
               f'orientation error {o_err:.3g} rad')
    return IKResult(q, False, float(p_err), float(o_err), search.iterations, search.attempts,
                    message, timed_out, [])


class _Search:
    """State of one IK search: a batch of configurations advanced together.

    Row 0 starts at the seed and is pulled toward it in the task null space (redundant arms);
    the other rows, and every row that converges or stalls, restart at random configurations
    inside the limits.
    """

    def __init__(self, model, frame, T_target, q_seed, w, p_tol, o_tol, position_only, rng):
        self.model, self.frame, self.T_target = model, frame, T_target
        self.q_seed, self.w, self.rng = q_seed, w, rng
        self.p_tol, self.o_tol, self.position_only = p_tol, o_tol, position_only
        self.lo = np.where(np.isfinite(model.lower_limits), model.lower_limits, -np.pi)
        self.hi = np.where(np.isfinite(model.upper_limits), model.upper_limits, np.pi)
        self.clip_lo = np.where(model.continuous, -np.inf, model.lower_limits)
        self.clip_hi = np.where(model.continuous, np.inf, model.upper_limits)
        task_rank = 3 if position_only else int(np.count_nonzero(w))
        self.redundant = model.nq > task_rank
        self.eye = np.eye(model.nq)
        self.found = []
        self.best = (np.inf, q_seed, np.inf, np.inf)
        # The seed and random restarts advance together from the first iteration: a batch
        # costs little more than one configuration in vectorised NumPy.
        self.attempts = _BATCH
        self.iterations = 0
        self.Q = np.vstack([np.clip(q_seed, self.clip_lo, self.clip_hi)[None, :],
                            rng.uniform(self.lo, self.hi, size=(_BATCH - 1, model.nq))])
        self.from_seed = np.arange(_BATCH) == 0
        self.best_cost = np.full(_BATCH, np.inf)
        self.stall = np.zeros(_BATCH, dtype=int)
        self.age = np.zeros(_BATCH, dtype=int)
        self._stepped = True

    def run(self, deadline, max_solutions):
        """Iterate until enough solutions or the deadline; returns True when timed out."""
        model = self.model
        while True:
            state = kinematics.forward_kinematics(model, self.Q, check=False)
            e = pose_error(state.frame_pose(self.frame), self.T_target)
            pos_err = np.sqrt(np.sum(e[:, :3] ** 2, axis=1))
            ori_err = np.sqrt(np.sum(e[:, 3:] ** 2, axis=1))
            ok = (pos_err <= self.p_tol) & (self.position_only | (ori_err <= self.o_tol))
            cost = 0.5 * np.sum(self.w * e * e, axis=1)
            self._record(ok, cost, pos_err, ori_err)
            # Enough solutions -- but while the seed's own row still converges, wait for it:
            # its solution is the one nearest the seed.
            seed_running = bool(np.any(self.from_seed & ~ok))
            if len(self.found) >= max_solutions and not seed_running:
                return False
            if time.monotonic() >= deadline:
                return True
            if self._restart(ok, cost):
                continue
            J = jacobians.frame_jacobian(state, self.frame, 'local_world_aligned')
            JtW = np.swapaxes(J, 1, 2) * self.w
            A = JtW @ J + (_DAMPING * cost + _LAMBDA0)[:, None, None] * self.eye
            dq = np.linalg.solve(A, JtW @ e[:, :, None])[..., 0]
            if self.redundant and self.from_seed[0]:
                dq[0] += _NULLSPACE_GAIN * _null_space_pull(J[:1], self.w,
                                                            (self.q_seed - self.Q[0])[None])[0]
            self.Q = np.clip(self.Q + dq, self.clip_lo, self.clip_hi)
            self.iterations += len(self.Q)
            self._stepped = True

    def _record(self, ok, cost, pos_err, ori_err):
        for i in np.flatnonzero(ok):
            _add_solution(self.found, _near_seed(self.Q[i], self.q_seed, self.model.continuous),
                          pos_err[i], ori_err[i])
        k = int(np.argmin(cost))
        if cost[k] < self.best[0]:
            self.best = (cost[k], self.Q[k].copy(), pos_err[k], ori_err[k])

    def _restart(self, ok, cost):
        """Replace converged, stalled and exhausted rows by random configurations."""
        if self._stepped:            # progress is judged only after a step was taken
            improved = cost < self.best_cost * (1.0 - 1e-3)
            self.stall = np.where(improved, 0, self.stall + 1)
            self.best_cost = np.minimum(self.best_cost, cost)
            self.age += 1
        done = ok | (self.stall >= _STALL) | (self.age >= _MAX_ITERATIONS)
        self._stepped = False
        if not done.any():
            return False
        keep = ~done
        n_new = _BATCH - int(keep.sum())
        model = self.model
        self.Q = np.concatenate([self.Q[keep], self.rng.uniform(self.lo, self.hi,
                                                                size=(n_new, model.nq))])
        self.from_seed = np.concatenate([self.from_seed[keep], np.zeros(n_new, dtype=bool)])
        self.best_cost = np.concatenate([self.best_cost[keep], np.full(n_new, np.inf)])
        self.stall = np.concatenate([self.stall[keep], np.zeros(n_new, dtype=int)])
        self.age = np.concatenate([self.age[keep], np.zeros(n_new, dtype=int)])
        self.attempts += n_new
        return True


def _null_space_pull(J, w, toward):
    """Component of ``toward`` (B, n) that leaves the weighted task unchanged to first order."""
    active = w > 0
    Ja = J[:, active, :]
    JJt = Ja @ np.swapaxes(Ja, 1, 2) + 1e-9 * np.eye(Ja.shape[1])
    y = np.linalg.solve(JJt, (Ja @ toward[:, :, None]))
    return toward - (np.swapaxes(Ja, 1, 2) @ y)[..., 0]


def _near_seed(q, q_seed, continuous):
    """Continuous joints moved by whole turns to the angle nearest the seed."""
    q = np.array(q, dtype=float)
    d = q - q_seed
    q[continuous] = q_seed[continuous] + (d[continuous] + np.pi) % (2 * np.pi) - np.pi
    return q


def _add_solution(found, q, p_err, o_err):
    for s in found:
        if np.linalg.norm(s[0] - q) < _DISTINCT:
            return
    found.append((q, float(p_err), float(o_err)))
