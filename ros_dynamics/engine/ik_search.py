"""The IK search: damped least squares from several starting points at once.

Iteration (Levenberg-Marquardt with Sugihara's damping, *Solvability-unconcerned inverse
kinematics by the Levenberg-Marquardt method*, 2011): with the pose error
``e = [p_target - p; log(R_target R^T)]`` (world axes), the weights ``W`` and
``E = e^T W e / 2``, each step solves ``(J^T W J + (E + lambda_0) I) dq = J^T W e`` -- the damping
grows with the error, so steps stay short far from the target and near singularities, and
vanish at convergence (quadratic convergence). Every iterate is clipped into the joint limits
(continuous joints are unbounded), and a joint at a limit that the step would push further out
is held for that step (its column dropped), so the other joints take the whole step -- the
active-set treatment of bounds. For redundant arms the seed's row also moves toward the seed
inside the null space of the task (a right-hand side ``g (lambda - lambda_0) (q_seed - q)``: in
the null space the step is about ``g (q_seed - q)`` while the error is large, across it almost
nothing, and nothing once converged -- with ``lambda_0`` in the weight, its bias stalled tight
tolerances near 1e-8 m), so solutions stay close to where the robot is.

Only the joints that move the tip are searched (:class:`~ros_dynamics.engine.ik_chain.Chain`);
the others keep the seed's values. Rows advanced together in one vectorised iteration: the
seed's, and starting points from the frame's seed table (:mod:`~ros_dynamics.engine.ik_seeds`,
the configurations whose poses are nearest the target, each a damped least-squares step ahead
from its stored pseudo-inverse) when :meth:`IKSolver.prepare` built one, else random ones;
once those run out, alternately random ones inside the limits and ones near the best
configuration so far. A row that converges, stalls or runs out of iterations is replaced while
the others step on, until enough solutions are found or the deadline passes (monotonic clock).
Only a configuration whose errors are within both tolerances is a success; otherwise the best
one found is returned with ``success=False``. :func:`from_seed` is one row alone -- the seed's,
for a seed already near its target (no starting points to set up), or one of the seed table's
nearest starts (:func:`~ros_dynamics.engine.ik_answers.table_result`) -- and
:func:`damped_step` the step the batched paths take (:mod:`~ros_dynamics.engine.ik_path`).
"""
from __future__ import annotations

import math
import time

import numpy as np
from numpy.typing import ArrayLike
from scipy.linalg.lapack import dposv

from .ik_chain import turn_into_limits
from .rotations import log_so3

# The damping's floor: below the Jacobian's smallest squared singular value next to a
# singularity (5e-9 on a calibrated leg with its wrist 5 mrad from straight; at 1e-6 the
# seed's row crawled there, 2 % of its error a step, and restarts answered anywhere along the
# wrist's turn), but not far below it: at 1e-9 a Panda seed with its first joint at a limit
# and its wrist 2.7 mrad from straight stepped out of its branch (answered 1.0 rad away, 0.015
# at 1e-8 and 1e-6). Whatever the floor, ``_DAMPING * E`` alone bounds a step along a singular
# direction by 1 / (2 sqrt(_DAMPING / 2)), about 2.2 rad.
_LAMBDA0 = 1e-8
_DAMPING = 0.1           # damping = _DAMPING * E + _LAMBDA0
_MAX_ITERATIONS = 12     # per attempt, before a restart
_STALL = 4               # iterations without a 0.1 % improvement before a restart
BATCH = 8                # rows advanced together (the seed and other starting points)
_NULLSPACE_GAIN = 0.3
_SIGMA = 0.3             # spread [rad or m] of the restarts drawn near the best so far
_DRAWS = 64              # random starting points drawn at a time
_SEED_GRACE = 3          # iterations the seed's row may still take once a solution is found
_DISTINCT = 1e-3         # [rad or m] solutions closer than this are the same
_CLOSE = 1e-4            # cost of a row that is about to converge (errors ~1 cm, rad) ...
_FAST = 0.01             # ... when its last step also cut its cost by this factor or more
_QUEUED = 16             # seed-table configurations queued for restarts
_EDGE = 1e-5             # [rad] a solution's angle this far past a limit is clipped in


_TWO_PI = 2.0 * np.pi
# Squared errors (B, 6) times this: |position error|^2, |angle|^2 and the cost e^T e / 2.
_SUMS = np.zeros((6, 3))
_SUMS[:3, 0] = _SUMS[3:, 1] = 1.0
_SUMS[:, 2] = 0.5


def pose_error(T: ArrayLike, T_target: ArrayLike):
    """Error ``[p_target - p; log(R_target R^T)]`` in world axes: (6,) for a pose ``T``
    (4, 4), (B, 6) for poses (B, 4, 4), against one target (4, 4) or one per pose (B, 4, 4).
    The rotation's angle comes from its sine and cosine, its axis from the skew part, and the
    full logarithm only past 2.5 rad, where the skew part loses the axis.
    """
    T, T_target = np.asarray(T, dtype=float), np.asarray(T_target, dtype=float)
    if T.ndim == 2:
        return pose_error(T[None], T_target)[0]
    if T_target.ndim == 2:
        e = PoseError(T_target)(T).copy()
    else:
        e = np.empty((len(T), 6))
        e[:, :3] = T_target[:, :3, 3] - T[:, :3, 3]
        s, c = _sine_cosine(T, T_target)
        sin = np.sqrt(np.einsum('bi,bi->b', s, s))
        e[:, 3:] = s * (np.arctan2(sin, c) / np.maximum(sin, 1e-300))[:, None]
    far = np.einsum('ij,ij->i', e[:, 3:], e[:, 3:]) > 2.5 ** 2
    if far.any():
        R_target = T_target[:3, :3] if T_target.ndim == 2 else T_target[far, :3, :3]
        e[far, 3:] = log_so3(R_target @ np.swapaxes(T[far, :3, :3], 1, 2))
    return e


def error_norms(T, T_targets):
    """Position errors [m] and rotation angles [rad] (B,) each of poses ``T`` (B, 4, 4)
    against ``T_targets`` (B, 4, 4): the norms of :func:`pose_error`, the angle from the sine
    and cosine of ``R_target R^T`` (accurate near zero, without the logarithm's axis).
    """
    dp = T_targets[:, :3, 3] - T[:, :3, 3]
    s, c = _sine_cosine(T, T_targets)
    return np.sqrt(np.einsum('bi,bi->b', dp, dp)), \
        np.arctan2(np.sqrt(np.einsum('bi,bi->b', s, s)), c)


def _sine_cosine(T, T_targets):
    """``sin(angle) axis`` (B, 3) and ``cos(angle)`` (B,) of ``R_target R^T`` for poses ``T``
    (B, 4, 4) against ``T_targets`` (B, 4, 4).
    """
    M = T_targets[:, :3, :3] @ np.swapaxes(T[:, :3, :3], -1, -2)
    s = 0.5 * (M[:, [2, 0, 1], [1, 2, 0]] - M[:, [1, 2, 0], [2, 0, 1]])
    c = 0.5 * (M[:, 0, 0] + M[:, 1, 1] + M[:, 2, 2] - 1.0)
    return s, c


def _pose_error_rows():
    """``M = P + vec(R_target) Q`` (16, 7) of :class:`PoseError`: ``P`` maps ``vec(T)`` to
    ``-p`` and the constant ``-1/2`` (through ``T[3, 3] = 1``); ``Q`` (9, 112) maps the target's
    rotation to the rows giving ``s / 2`` and ``trace / 2``.
    """
    P = np.zeros((16, 7))
    P[[3, 7, 11], [0, 1, 2]] = -1.0
    P[15, 6] = -0.5
    Q = np.zeros((3, 3, 16, 7))
    for i, (j, k) in enumerate(((2, 1), (0, 2), (1, 0))):
        # s_i = (R_t R^T)[j, k] - (R_t R^T)[k, j] = sum_c R_t[j, c] R[k, c] - R_t[k, c] R[j, c]
        for c in range(3):
            Q[j, c, 4 * k + c, 3 + i] += 0.5
            Q[k, c, 4 * j + c, 3 + i] -= 0.5
    for r in range(3):
        for c in range(3):
            Q[r, c, 4 * r + c, 6] = 0.5          # the trace: sum of R_t[r, c] R[r, c]
    return P.ravel(), Q.reshape(9, 112)


_POSITION_ROWS, _ROTATION_ROWS = _pose_error_rows()


class PoseError:
    """Pose error against one target for a batch of poses in one matrix product.

    ``vec(T) M`` gives ``p_target - p``, ``sin(angle) axis`` (half the vector of the skew part
    of ``R_target R^T``) and ``cos(angle) = (trace - 1) / 2`` -- all affine in the entries of
    ``T``, whose last one is 1.
    """

    def __init__(self, T_target):
        self.M = (_POSITION_ROWS + T_target[:3, :3].ravel().dot(_ROTATION_ROWS)).reshape(16, 7)
        self.M[15, :3] = T_target[:3, 3]

    def __call__(self, T):
        """``[p_target - p; angle axis]`` (B, 6) in world axes for poses ``T`` (B, 4, 4)."""
        return _angle_axis(T.reshape(len(T), 16).dot(self.M))

    def one(self, T):
        """:meth:`__call__` for one pose ``T`` (4, 4) without the batch: the error (6,), and
        its squared position error [m^2] and squared angle [rad^2].
        """
        out = T.reshape(16).dot(self.M)
        x, y, z, a, b, c, cosine = out.tolist()
        sine = math.sqrt(a * a + b * b + c * c)
        angle = math.atan2(sine, cosine)
        out[3:6] *= angle / max(sine, 1e-300)
        return out[:6], x * x + y * y + z * z, angle * angle

    def of_features(self, F, length):
        """``[p_target - p; sin(angle) axis]`` (B, 6) for poses given by ``F`` (B, 12): the
        position, then ``length`` times the rotation matrix's entries, row-major (the seed
        table's pose features).
        """
        M = self.M[_FEATURE_ROWS]
        M[3:12] /= length
        return (F.dot(M[:12]) + M[12])[:, :6]


#: Rows of a flattened 4x4 transform: the position, the rotation's entries, the last one.
_FEATURE_ROWS = [3, 7, 11, 0, 1, 2, 4, 5, 6, 8, 9, 10, 15]


def _angle_axis(out):
    """``out`` (B, 7) of :class:`PoseError`'s product, its sine part scaled to the angle in
    place: the error ``[p_target - p; angle axis]`` (B, 6), a view.
    """
    s = out[:, 3:6]
    sin = np.sqrt(np.einsum('ij,ij->i', s, s))
    s *= (np.arctan2(sin, out[:, 6]) / np.maximum(sin, 1e-300))[:, None]
    return out[:, :6]


class Search:
    """State of one IK search: a batch of configurations of the joints that move the tip,
    advanced together.

    Row 0 starts at the seed and is pulled toward it in the task null space (redundant arms);
    the other rows start at the seed table's configurations nearest the target (if the frame
    has one, :meth:`IKSolver.prepare`) or at random inside the limits, and so does every
    row that converges or stalls. Joints outside ``active`` (a mask over ``chain.moved``, None
    for all) keep the seed's values: they are held in every step and every starting point.
    ``w`` (6,): weights of the error rows, None for all ones. ``starts`` (BATCH - 1, m): the
    table's starting points when the caller has them already (:func:`~ros_dynamics.engine.
    ik_answers.table_result`, every joint active, unweighted).
    """

    def __init__(self, model, chain, table, T_target, q_seed, w, p_tol, o_tol, position_only,
                 rng, active=None, starts=None):
        self.chain, self.error, self.rng_seed = chain, PoseError(T_target), rng
        self.T_target = T_target
        self.q_seed = q_seed
        self.inactive = None if active is None or active.all() else ~active
        #: ``(j, seed, lower, upper)`` of each joint ``j`` (index in ``q``) the search moves whose
        #: angle counts modulo a turn (:attr:`~ros_dynamics.engine.ik_chain.Chain.turn_limits`):
        #: a solution's is moved by the whole turns nearest the seed inside its limits
        #: (:func:`~ros_dynamics.engine.ik_chain.turn_into_limits`); the other joints keep the
        #: seed's values bit for bit.
        self.turned = [(j, float(q_seed[j]), lower, upper)
                       for i, j, lower, upper in chain.turn_limits
                       if self.inactive is None or not self.inactive[i]]
        self.tol2 = np.array([p_tol ** 2, np.inf if position_only else o_tol ** 2])
        self.w = w
        # (6, 3): squared errors of a row times this give |dp|^2, |dtheta|^2 and the cost.
        self.sums = _SUMS
        if w is not None:
            self.sums = _SUMS.copy()
            self.sums[:, 2] *= w
        a = self.active = chain.moved
        task_rank = 3 if position_only else 6 if w is None else int(np.count_nonzero(w))
        n_active = len(a) if self.inactive is None else int(np.count_nonzero(active))
        self.redundant = n_active > task_rank
        self.found = []
        self.iterations = 0
        self.attempts = BATCH
        X = self.X = np.empty((BATCH, len(a)))
        #: (m,) bounds every iterate is clipped into: the limits, or the seed's value for a
        #: joint outside ``active`` (kept even where the seed has it outside its limits).
        self.clip_lower, self.clip_upper = chain.clip_lower, chain.clip_upper
        if self.inactive is not None:
            x_seed = q_seed[a]
            self.clip_lower = np.where(self.inactive, x_seed, chain.clip_lower)
            self.clip_upper = np.where(self.inactive, x_seed, chain.clip_upper)
        np.clip(q_seed[a], self.clip_lower, self.clip_upper, out=X[0])
        chain.wrap(X[:1])
        if self.inactive is not None:        # as the seed has them, not by a turn
            X[0, self.inactive] = q_seed[a][self.inactive]
        self.seed_x = X[0].copy()
        self.seed_row = True             # row 0 still iterates from the seed
        # Starting points for the other rows and their restarts: the table's nearest samples,
        # the next _QUEUED fetched only once restarts need them (if the table has more).
        self.table, self.position_only = table, position_only
        self.refilled = table is None or len(table) <= BATCH - 1
        self.queue = self._from_table(0, BATCH - 1) if starts is None else starts
        self.rng = None                  # random starting points: drawn in blocks when needed
        self.drawn = _DRAWS
        #: Per row: its lowest cost since it (re)started and the configuration giving it; the
        #: best of the rows restarted so far.
        self.best_cost = np.full(BATCH, np.inf)
        self.best_x = X.copy()
        self.retired = (np.inf, self.seed_x)
        X[1:] = self._fresh(BATCH - 1)
        #: Per row: -1 / +1 where the last step was clipped to a lower / upper bound, else 0.
        self.side = np.zeros_like(X)
        self.side[0] = np.sign(q_seed[a] - X[0])
        self.clipped = bool(self.side[0].any())
        # best_cost of the last _STALL iterations (a ring), and the iteration each row started.
        self.history = np.full((_STALL, BATCH), np.inf)
        self.started = np.zeros(BATCH, dtype=int)
        self.iteration = 0
        self.waited = 0
        self.seed_cost = np.inf          # row 0's cost at the previous iteration

    def q(self, x):
        """The full configurations (..., nq) for the values ``x`` (..., m) of the searched
        joints, joints that count modulo a turn moved by the whole turns nearest the seed that
        keep them inside their limits (a seed outside them too; within :data:`_EDGE` of a
        limit: clipped in).
        """
        return self._turned(x)[0]

    def _turned(self, x):
        """:meth:`q` and which configurations (...) a clip into the limits moved."""
        q = np.empty(x.shape[:-1] + self.q_seed.shape)
        q[...] = self.q_seed
        q[..., self.active] = x
        clipped = np.zeros(x.shape[:-1], dtype=bool)
        if self.turned:
            rows, flags = q.reshape(-1, q.shape[-1]), clipped.reshape(-1)
            for r, row in enumerate(rows.tolist()):
                for j, seed, lower, upper in self.turned:
                    v = turn_into_limits(row[j], seed, lower, upper, _EDGE)
                    if v is not None:
                        kept = min(max(v, lower), upper)
                        flags[r] |= kept != v
                        rows[r, j] = kept
        return q, clipped

    def best(self):
        """The lowest-cost configuration met (m,), its position error [m] and orientation
        error [rad].
        """
        k = int(np.argmin(self.best_cost))
        x = self.best_x[k] if self.best_cost[k] < self.retired[0] else self.retired[1]
        e = pose_error(self.chain.poses(x[None])[0], self.T_target)
        return x, float(np.linalg.norm(e[:3])), float(np.linalg.norm(e[3:]))

    def run(self, deadline, max_solutions):
        """Iterate until enough solutions or the deadline; returns True when timed out."""
        X, m, chain = self.X, self.X.shape[1], self.chain
        while True:
            T, JT = chain.evaluate(X)
            e = self.error(T)
            sums = (e * e) @ self.sums      # per row: |position error|^2, |angle|^2, cost
            ok = (sums[:, :2] <= self.tol2).all(1)
            cost = sums[:, 2]
            if ok.any():
                errors = np.sqrt(sums[ok, :2])
                Q, clipped = self._turned(X[ok])
                if clipped.any():            # a hair past a limit, clipped in: check again
                    again = pose_error(chain.poses(Q[clipped][:, self.active]), self.T_target)
                    errors[clipped] = np.stack([np.linalg.norm(again[:, :3], axis=1),
                                                np.linalg.norm(again[:, 3:], axis=1)], axis=1)
                for q, (p_err, o_err) in zip(Q, errors.tolist()):
                    if p_err ** 2 <= self.tol2[0] and o_err ** 2 <= self.tol2[1]:
                        _add_solution(self.found, q, p_err, o_err)
            # Enough solutions -- but while the seed's own row is about to converge (close and
            # closing in fast), give it a few more iterations: its solution is the one nearest
            # the seed.
            seed_cost, self.seed_cost = self.seed_cost, float(cost[0])
            if len(self.found) >= max_solutions:
                if not (self.seed_row and not ok[0] and cost[0] < _CLOSE
                        and cost[0] < _FAST * seed_cost) or self.waited >= _SEED_GRACE:
                    return False
                self.waited += 1
            done = self._progress(ok, cost)
            if time.monotonic() >= deadline:
                return True
            JtW = JT if self.w is None else JT * self.w
            rhs = JtW @ e[:, :, None]
            # Joints at a limit that the gradient pushes outward are held (their columns
            # dropped): the others then take the whole step instead of one clipped afterwards.
            held = self.side * rhs[..., 0] > 0.0 if self.clipped else None
            if self.inactive is not None:
                held = self.inactive if held is None else held | self.inactive
            if held is not None and held.any():
                free = ~held[..., None]
                JT = JT * free
                JtW = JtW * free
                rhs *= free
            A = JtW @ JT.transpose(0, 2, 1)
            damping = _DAMPING * cost + _LAMBDA0
            A.reshape(len(A), m * m)[:, ::m + 1] += damping[:, None]
            if self.redundant and self.seed_row and (done is None or not done[0]):
                # Toward the seed, weighted by the damping less its floor (pull_weight):
                # (A) dq = ... + w (q_seed - q) moves by about g (q_seed - q) in the task's null
                # space while the error is large, and by almost nothing across it (the classic
                # damped-least-squares secondary task); converged, the pull is gone.
                rhs[0, :, 0] += pull_weight(cost[0]) * (self.seed_x - X[0])
            stepped = X + np.linalg.solve(A, rhs)[..., 0]
            chain.wrap(stepped)
            stepped.clip(self.clip_lower, self.clip_upper, out=X)
            np.sign(np.subtract(stepped, X, out=self.side), out=self.side)
            self.clipped = bool(self.side.any())
            self.iterations += len(X)
            if done is not None:         # the other rows have stepped on meanwhile
                self._restart(np.flatnonzero(done))

    def _progress(self, ok, cost):
        """Rows to restart (converged, stalled, or out of iterations while not about to
        converge), or None; keeps each row's best.
        """
        improved = cost < self.best_cost
        np.copyto(self.best_x, self.X, where=improved[:, None])
        np.minimum(self.best_cost, cost, out=self.best_cost)
        it, slot = self.iteration, self.iteration % _STALL
        self.iteration += 1
        if it < _STALL:              # no row can have stalled or aged yet
            self.history[slot] = self.best_cost
            return ok if ok.any() else None
        # Stalled: no 0.1 % improvement over the last _STALL iterations.
        done = self.best_cost > self.history[slot] * (1.0 - 1e-3)
        self.history[slot] = self.best_cost
        done |= ok
        done |= (it - self.started >= _MAX_ITERATIONS) & (cost > _CLOSE)
        return done if done.any() else None

    def _fresh(self, count):
        """``count`` starting points: the queued ones first, then alternately anywhere inside
        the limits and near the best configuration so far.
        """
        rows = self._draw(count)
        if self.inactive is not None:
            rows[:, self.inactive] = self.seed_x[self.inactive]
        return rows

    def _from_table(self, skip, k):
        """The seed table's starting points ``skip`` to ``k`` (nearest the target first),
        inside the limits: a damped least-squares step ahead of the samples
        (:meth:`SeedTable.starts`) unless the error is weighted.
        """
        if self.table is None:
            return np.empty((0, len(self.active)))
        if self.w is None:
            X = self.table.starts(self.error, self.T_target, k)[skip:]
            self.chain.wrap(X)
            return np.clip(X, self.clip_lower, self.clip_upper, out=X)
        return self.table.nearest(self.T_target, k, self.position_only)[skip:]

    def _draw(self, count):
        if len(self.queue) < count and not self.refilled:
            self.refilled = True
            self.queue = np.concatenate([self.queue,
                                         self._from_table(BATCH - 1, BATCH - 1 + _QUEUED)])
        taken, self.queue = self.queue[:count], self.queue[count:]
        more = count - len(taken)
        if more == 0:
            return taken.copy()
        lo, hi = self.chain.lower, self.chain.upper
        if self.drawn + more > _DRAWS:
            if self.rng is None:
                self.rng = np.random.default_rng(self.rng_seed)
            self.uniform = self.rng.uniform(lo, hi, size=(_DRAWS, len(lo)))
            self.noise = self.rng.normal(scale=_SIGMA, size=(_DRAWS, len(lo)))
            self.drawn = 0
        fresh = self.uniform[self.drawn:self.drawn + more].copy()
        k = int(np.argmin(self.best_cost))
        best_cost, best_x = min((self.best_cost[k], self.best_x[k]), self.retired,
                                key=lambda c: c[0])
        if np.isfinite(best_cost):
            near = fresh[self.drawn % 2::2]
            np.add(best_x, self.noise[self.drawn:self.drawn + len(near)], out=near)
            np.maximum(near, lo, out=near)
            np.minimum(near, hi, out=near)
        self.drawn += more
        return np.concatenate([taken, fresh]) if len(taken) else fresh

    def _restart(self, rows):
        k = rows[np.argmin(self.best_cost[rows])]
        if self.best_cost[k] < self.retired[0]:
            self.retired = (self.best_cost[k], self.best_x[k].copy())
        self.best_cost[rows] = np.inf
        self.X[rows] = self._fresh(len(rows))
        self.seed_row &= rows[0] != 0
        self.side[rows] = 0.0
        self.history[:, rows] = np.inf
        self.started[rows] = self.iteration
        self.attempts += len(rows)


#: Most damped least-squares iterations :func:`from_seed` takes.
WARM_ITERATIONS = 4


def from_seed(chain, T_target, x_seed, seed_pose, limits, p_tol, o_tol, active=None,
              iterations=WARM_ITERATIONS, cut=0.25):
    """The seed's row of :class:`Search` alone (or a seed table's start as ``x_seed``),
    without its set-up: damped least squares from ``x_seed`` (m,) -- its joint frames and pose
    ``seed_pose``
    (:meth:`~ros_dynamics.engine.ik_chain.Chain.frames_one`, which its caller computed) --
    inside the joint ``limits`` (lower (m,), upper (m,); no turn wraps an
    angle: the answer stays next to the seed) -- null-space pull toward it on redundant arms,
    the joints outside ``active`` (m, bool) held, the joints a step would take past a limit
    stopped there (:func:`_limited_step`) -- while each iteration cuts the cost to ``cut``
    times it or less, at most ``iterations``: ``(x (m,), position error [m], orientation
    error [rad], iterations)`` once both errors are within the tolerances, else None (the seed
    too far for quadratic convergence: the search then runs).
    """
    lower, upper = limits
    if ((x_seed < lower) | (x_seed > upper)).any():         # the method: np.any's wrapper costs
        return None
    error = PoseError(T_target)
    x, previous = x_seed.copy(), np.inf
    redundant = (len(x) if active is None else int(np.count_nonzero(active))) > 6
    for k in range(iterations + 1):
        frames, T = seed_pose if k == 0 else chain.frames_one(x)
        e, p2, o2 = error.one(T)
        cost = 0.5 * (p2 + o2)
        if p2 <= p_tol * p_tol and o2 <= o_tol * o_tol:
            if active is not None:           # held as the seed has them (-0.0 + 0.0 is 0.0)
                x[~active] = x_seed[~active]
            return x, math.sqrt(p2), math.sqrt(o2), k
        if k == iterations or cost > cut * previous:
            return None
        previous = cost
        JT = chain.jacobian_one(frames, T)                 # only where a step follows
        if active is not None:
            JT = JT * active[:, None]
        pull = x_seed - x if redundant else None
        x = _limited_step(JT, e, cost, pull, x, lower, upper)


def _limited_step(JT, e, cost, pull, x, lower, upper):
    """``x`` (m,) after its damped least-squares step -- transposed Jacobian ``JT`` (m, 6),
    error ``e`` (6,), cost ``e^T e / 2``, ``pull`` (m,) or None as :func:`damped_step` -- with
    an active set: a joint the step would take past a limit moves to it, its column leaves
    the Jacobian and its move the error (``e - J dx_i``), and the others step again, until
    none crosses a limit (two joints at limits, as on Panda and xArm7 near their stops, each
    push the other's step out in turn); inside ``[lower, upper]`` (m,) against rounding.
    """
    stepped = x + _damped_step_one(JT, e, cost, pull)
    past = (stepped < lower) | (stepped > upper)
    if not past.any():                                      # most often none crosses a limit
        return stepped
    fixed = np.zeros(len(x), dtype=bool)
    move = np.zeros(len(x))
    while past.any():                    # each pass fixes one joint more at least
        fixed |= past
        move[past] = np.clip(stepped[past], lower[past], upper[past]) - x[past]
        free = ~fixed
        step = _damped_step_one(JT * free[:, None], e - move.dot(JT), cost,
                                None if pull is None else pull * free)
        step[fixed] = move[fixed]
        stepped = x + step
        past = ((stepped < lower) | (stepped > upper)) & free
    return np.minimum(np.maximum(stepped, lower), upper)     # np.clip's: twice the cost


def _damped_step_one(JT, e, cost, pull):
    """:func:`damped_step` of one row (``JT`` (m, 6), ``e`` (6,), ``cost`` a float, ``pull``
    (m,) or None), without the batch's overhead: LAPACK's Cholesky solve of the symmetric
    positive definite system (1 us for six joints, against 4 for NumPy's general solve and
    its checks), the general solve where rounding leaves it not positive definite.
    """
    A = JT.dot(JT.T)                          # ndarray.dot: half matmul's overhead here
    A.ravel()[::len(A) + 1] += _DAMPING * cost + _LAMBDA0
    rhs = JT.dot(e)
    if pull is not None:
        rhs += pull_weight(cost) * pull
    _, step, info = dposv(A, rhs)
    return step if info == 0 else np.linalg.solve(A, rhs)


def pull_weight(cost):
    """The weight ``g lambda`` of the null-space pull for rows of cost ``cost`` (B,) or a
    float: the damping without its floor, so that the pull vanishes with the error. With the
    floor, its bias across the task (``g lambda_0 |q_seed - q| / sigma``) stalled a redundant
    arm near 1e-8 m: asked for 1e-8, Baxter answered up to 1.7 rad from a seed 0.01 rad off.
    """
    return _NULLSPACE_GAIN * _DAMPING * cost


def damped_step(JT, e, cost, pull=None):
    """The damped least-squares steps (B, m) of rows with transposed Jacobians ``JT``
    (B, m, 6), errors ``e`` (B, 6) and costs ``e^T e / 2`` (B,): ``(J^T J + lambda I) dq =
    J^T e`` with :class:`Search`'s damping ``lambda``, plus ``g lambda pull`` (B, m) when given
    (a pull toward a configuration in the task's null space, as :meth:`Search.run`'s).
    """
    damping = _DAMPING * cost + _LAMBDA0
    A = JT @ JT.transpose(0, 2, 1)
    m = A.shape[1]
    A.reshape(len(A), m * m)[:, ::m + 1] += damping[:, None]
    rhs = (JT @ e[:, :, None])[..., 0]
    if pull is not None:
        rhs += pull_weight(cost)[..., None] * pull
    return np.linalg.solve(A, rhs[..., None])[..., 0]


def _add_solution(found, q, p_err, o_err):
    for s in found:
        if np.linalg.norm(s[0] - q) < _DISTINCT:
            return
    found.append((q, float(p_err), float(o_err)))
