"""Numerical inverse kinematics: damped least squares with batched random restarts.

Iteration (Levenberg-Marquardt with Sugihara's damping, *Solvability-unconcerned inverse
kinematics by the Levenberg-Marquardt method*, 2011): with the pose error
``e = [p_target - p; log(R_target R^T)]`` (world axes), the weights ``W`` and
``E = e^T W e / 2``, each step solves ``(J^T W J + (E + lambda_0) I) dq = J^T W e`` -- the damping
grows with the error, so steps stay short far from the target and near singularities, and
vanish at convergence (quadratic convergence). Every iterate is clipped into the joint limits
(continuous joints are unbounded). For redundant arms the seed's row also moves toward the seed
inside the null space of the task (a right-hand side ``g lambda (q_seed - q)``: in the null space
the step is ``g (q_seed - q)``, across it almost nothing), so solutions stay close to where the
robot is.

Only the joints that move the tip are searched (:class:`Chain`); the others keep the seed's
values. Rows: the seed's and random restarts -- half anywhere inside the limits, half near the
best configuration so far -- advanced together in one vectorised iteration; a row that
converges, stalls or runs out of iterations is replaced while the others step on, until enough
solutions are found or the deadline passes (monotonic clock). Only a configuration whose errors
are within both tolerances is a success; otherwise the best one found is returned with
``success=False``.
"""
from dataclasses import dataclass, field
import time

import numpy as np

from . import kinematics
from .exceptions import InvalidInputError, ShapeError
from .rotations import cross, log_so3

_LAMBDA0 = 1e-6          # damping floor
_DAMPING = 0.1           # damping = _DAMPING * E + _LAMBDA0
_MAX_ITERATIONS = 12     # per attempt, before a restart
_STALL = 4               # iterations without a 0.1 % improvement before a restart
_BATCH = 24              # rows advanced together (the seed and random restarts)
_NULLSPACE_GAIN = 0.3
_NEAR_BEST = 0.5         # share of restarts drawn near the best configuration so far ...
_SIGMA = 0.3             # ... with this spread [rad or m]; the others uniform in the limits
_SEED_GRACE = 3          # iterations the seed's row may still take once a solution is found
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


# Entries of a flattened R giving its skew part R - R^T: R[2,1] - R[1,2], R[0,2] - R[2,0],
# R[1,0] - R[0,1]; and its diagonal.
_SKEW_PLUS = np.array([7, 2, 3])
_SKEW_MINUS = np.array([5, 6, 1])
_DIAGONAL = np.array([0, 4, 8])


def pose_error(T, T_target, exact=True):
    """Error ``[p_target - p; log(R_target R^T)]`` in world axes: (6,) for a pose ``T``
    (4, 4), (B, 6) for poses (B, 4, 4).

    ``exact=False`` (the IK iteration) skips the full logarithm for angles near pi, where the
    rotation vector read from the skew part keeps its angle but loses accuracy in its axis --
    still a descent direction, and such rows are far from any tolerance.
    """
    if T.ndim == 2:
        return pose_error(T[None], T_target, exact)[0]
    e = np.empty((len(T), 6))
    np.subtract(T_target[:3, 3], T[:, :3, 3], out=e[:, :3])
    dR = T_target[:3, :3] @ np.swapaxes(T[:, :3, :3], 1, 2)
    # log(dR) from its skew part 2 sin(t) axis; the full log only for angles near pi.
    flat = dR.reshape(-1, 9)
    s = flat.take(_SKEW_PLUS, 1) - flat.take(_SKEW_MINUS, 1)
    cos_t = 0.5 * flat.take(_DIAGONAL, 1).sum(axis=1) - 0.5
    if not exact or cos_t.min() > -0.9:
        two_sin = np.sqrt(np.einsum('ij,ij->i', s, s))
        # theta / (2 sin theta); at theta = 0, s = 0 and any finite factor gives 0.
        factor = np.arctan2(0.5 * two_sin, cos_t) / np.maximum(two_sin, 1e-300)
        np.multiply(s, factor[:, None], out=e[:, 3:])
    else:
        e[:, 3:] = log_so3(dR)
    return e


class Chain:
    """Pose and Jacobian of one frame from the joints that move it, for a batch of
    configurations -- what every IK iteration needs, without the rest of the tree.

    Joint k of the chain is a constant transform ``C_k`` from the previous joint's z-aligned
    frame (:attr:`RobotModel.joint_z_frame`; the root frame for the first) followed by a turn
    about z (revolute) or a shift along z (prismatic); the frame hangs at ``E`` from the last.
    """

    def __init__(self, model, frame):
        f = model.frame_index(frame)
        joints = np.flatnonzero(model.joint_moves_body[model.frame_body[f]])   # root first
        A = model.joint_z_frame
        place = []
        previous = np.eye(3)
        for k in joints:
            C = np.array(model.joint_placement[k])
            C[:3, :3] = previous.T @ C[:3, :3] @ A[k]
            C[:3, 3] = previous.T @ C[:3, 3]
            place.append(C)
            previous = A[k]
        E = np.array(model.frame_placement[f])
        E[:3] = previous.T @ E[:3]
        self.place = np.array(place).reshape(len(joints), 4, 4)
        self.frame_placement = E
        self.revolute = model.joint_revolute[joints]
        self.q_index = model.joint_q_index[joints]
        self.multiplier = model.joint_multiplier[joints]
        self.offset = model.joint_offset[joints]
        #: (n_chain, nq): chain joint velocities from the independent ones (mimics included).
        self.columns = model.mimic_matrix[joints]
        self.all_revolute = bool(np.all(self.revolute))
        # Chains without mimic joints read their joints' q directly.
        self.mimic = not (np.all(self.multiplier == 1.0) and np.all(self.offset == 0.0)
                          and len(set(self.q_index.tolist())) == len(joints))
        #: Independent joints that move the frame: the columns of the Jacobian returned.
        self.moved = np.flatnonzero(self.columns.any(axis=0)) if self.mimic else self.q_index
        self.moved_columns = self.columns[:, self.moved]

    def pose_and_jacobian(self, Q):
        """``T_root_frame`` (B, 4, 4) and the world-aligned Jacobian (B, 6, len(moved)) at
        ``Q`` (B, nq), its columns those of the joints :attr:`moved` (the others are zero).
        """
        C = self.place
        n, B = len(C), len(Q)
        if n == 0:
            return np.broadcast_to(self.frame_placement, (B, 4, 4)), np.zeros((B, 6, 0))
        x = Q.take(self.q_index, 1)
        if self.mimic:
            x = x * self.multiplier + self.offset
        c, s = np.cos(x)[..., None], np.sin(x)[..., None]
        if not self.all_revolute:
            c[:, ~self.revolute], s[:, ~self.revolute] = 1.0, 0.0
        L = np.empty((B, n, 4, 4))               # C_k R_z(x_k), or C_k shifted by x_k along z
        np.multiply(c, C[..., 0], out=L[..., 0])
        L[..., 0] += s * C[..., 1]
        np.multiply(c, C[..., 1], out=L[..., 1])
        L[..., 1] -= s * C[..., 0]
        L[..., 2:] = C[..., 2:]
        if not self.all_revolute:
            L[..., 3] += np.where(self.revolute, 0.0, x)[..., None] * C[..., 2]
        T = L                                    # z-aligned joint frames in the root frame
        for k in range(1, n):
            np.matmul(T[:, k - 1], L[:, k], out=T[:, k])
        T_frame = T[:, -1] @ self.frame_placement
        z = T[..., :3, 2]
        linear = cross(z, T_frame[:, None, :3, 3] - T[..., :3, 3])
        if not self.all_revolute:
            linear[:, ~self.revolute] = z[:, ~self.revolute]
            z = np.where(self.revolute[:, None], z, 0.0)
        J = np.swapaxes(np.concatenate([linear, z], axis=2), 1, 2)
        return T_frame, (J @ self.moved_columns if self.mimic else J)


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
    found = found[:int(max_solutions)]
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
        self.model, self.chain, self.T_target = model, Chain(model, frame), T_target
        self.q_seed, self.w, self.rng = q_seed, w, rng
        self.p_tol2 = p_tol ** 2
        self.o_tol2 = np.inf if position_only else o_tol ** 2
        # (6, 3): squared errors of a row times this give |dp|^2, |dtheta|^2 and the cost.
        self.sums = np.zeros((6, 3))
        self.sums[:3, 0] = self.sums[3:, 1] = 1.0
        self.sums[:, 2] = 0.5 * w
        self.weighted = bool(np.any(w != 1.0))
        # Only the joints that move the frame are searched; the others keep the seed's values.
        a = self.active = self.chain.moved
        self.lo = np.where(np.isfinite(model.lower_limits), model.lower_limits, -np.pi)[a]
        self.hi = np.where(np.isfinite(model.upper_limits), model.upper_limits, np.pi)[a]
        clip_lo = np.where(model.continuous, -np.inf, model.lower_limits)
        clip_hi = np.where(model.continuous, np.inf, model.upper_limits)
        self.clip_lo, self.clip_hi = clip_lo[a], clip_hi[a]
        task_rank = 3 if position_only else int(np.count_nonzero(w))
        self.redundant = len(a) > task_rank
        self.eye = np.eye(len(a))
        self.found = []
        self.best = (np.inf, q_seed, np.inf, np.inf)
        # The seed and random restarts advance together from the first iteration: a batch
        # costs little more than one configuration in vectorised NumPy.
        self.attempts = _BATCH
        self.iterations = 0
        self.Q = np.tile(np.clip(q_seed, clip_lo, clip_hi), (_BATCH, 1))
        self.Q[1:, a] = rng.uniform(self.lo, self.hi, size=(_BATCH - 1, len(a)))
        self.from_seed = np.arange(_BATCH) == 0
        self.best_cost = np.full(_BATCH, np.inf)
        self.stall = np.zeros(_BATCH, dtype=int)
        self.age = np.zeros(_BATCH, dtype=int)
        self.waited = 0

    def run(self, deadline, max_solutions):
        """Iterate until enough solutions or the deadline; returns True when timed out."""
        w, eye = self.w, self.eye
        while True:
            T, J = self.chain.pose_and_jacobian(self.Q)
            e = pose_error(T, self.T_target, exact=False)
            sums = (e * e) @ self.sums      # per row: |position error|^2, |angle|^2, cost
            ok = (sums[:, 0] <= self.p_tol2) & (sums[:, 1] <= self.o_tol2)
            cost = sums[:, 2]
            self._record(ok, sums)
            # Enough solutions -- but while the seed's own row still runs, give it a few more
            # iterations: its solution is usually the one nearest the seed.
            if len(self.found) >= max_solutions:
                if not (self.from_seed[0] and not ok[0]) or self.waited >= _SEED_GRACE:
                    return False
                self.waited += 1
            if time.monotonic() >= deadline:
                return True
            done = self._progress(ok, cost)
            JtW = np.swapaxes(J, 1, 2)
            if self.weighted:
                JtW = JtW * w
            A = JtW @ J
            damping = _DAMPING * cost + _LAMBDA0
            A += damping[:, None, None] * eye
            rhs = JtW @ e[:, :, None]
            a = self.active
            if self.redundant and self.from_seed[0] and not done[0]:
                # Toward the seed with the step's own damping as weight: (A) dq = ... +
                # g lambda (q_seed - q) moves by g (q_seed - q) in the task's null space and
                # by almost nothing across it (the classic damped-least-squares secondary task).
                rhs[0, :, 0] += (_NULLSPACE_GAIN * damping[0]) * (self.q_seed[a] - self.Q[0, a])
            dq = np.linalg.solve(A, rhs)[..., 0]
            self.Q[:, a] = np.clip(self.Q[:, a] + dq, self.clip_lo, self.clip_hi)
            self.iterations += len(self.Q)
            if done.any():           # the other rows have stepped on meanwhile
                self._restart(np.flatnonzero(done))

    def _record(self, ok, sums):
        if ok.any():
            for i in np.flatnonzero(ok):
                _add_solution(self.found,
                              _near_seed(self.Q[i], self.q_seed, self.model.continuous),
                              *np.sqrt(sums[i, :2]))
        k = int(np.argmin(sums[:, 2]))
        if sums[k, 2] < self.best[0]:
            self.best = (sums[k, 2], self.Q[k].copy(), *np.sqrt(sums[k, :2]))

    def _progress(self, ok, cost):
        """Rows to restart (converged, stalled or out of iterations), after bookkeeping."""
        improved = cost < self.best_cost * (1.0 - 1e-3)
        self.stall += 1
        self.stall[improved] = 0
        np.minimum(self.best_cost, cost, out=self.best_cost)
        self.age += 1
        return ok | (self.stall >= _STALL) | (self.age >= _MAX_ITERATIONS)

    def _restart(self, rows):
        """Give ``rows`` new configurations: near the best one so far or anywhere inside the
        limits.
        """
        a = self.active
        fresh = self.rng.uniform(self.lo, self.hi, size=(len(rows), len(a)))
        if np.isfinite(self.best[0]):
            near = self.rng.random(len(rows)) < _NEAR_BEST
            fresh[near] = np.clip(self.best[1][a] + self.rng.normal(scale=_SIGMA, size=(
                int(near.sum()), len(a))), self.lo, self.hi)
        self.Q[np.ix_(rows, a)] = fresh
        self.from_seed[rows] = False
        self.best_cost[rows] = np.inf
        self.stall[rows] = 0
        self.age[rows] = 0
        self.attempts += len(rows)


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
