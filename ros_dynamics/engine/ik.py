"""Numerical inverse kinematics: damped least squares from several starting points at once.

Iteration (Levenberg-Marquardt with Sugihara's damping, *Solvability-unconcerned inverse
kinematics by the Levenberg-Marquardt method*, 2011): with the pose error
``e = [p_target - p; log(R_target R^T)]`` (world axes), the weights ``W`` and
``E = e^T W e / 2``, each step solves ``(J^T W J + (E + lambda_0) I) dq = J^T W e`` -- the damping
grows with the error, so steps stay short far from the target and near singularities, and
vanish at convergence (quadratic convergence). Every iterate is clipped into the joint limits
(continuous joints are unbounded), and a joint at a limit that the step would push further out
is held for that step (its column dropped), so the other joints take the whole step -- the
active-set treatment of bounds. For redundant arms the seed's row also moves toward the seed
inside the null space of the task (a right-hand side ``g lambda (q_seed - q)``: in the null space
the step is ``g (q_seed - q)``, across it almost nothing), so solutions stay close to where the
robot is.

Only the joints that move the tip are searched (:class:`Chain`); the others keep the seed's
values. Rows advanced together in one vectorised iteration: the seed's, and starting points
from the frame's seed table (:mod:`~ros_dynamics.engine.ik_seeds`, the configurations whose
poses are nearest the target) when :meth:`RobotModel.prepare_ik` built one, else random ones;
once those run out, alternately random ones inside the limits and ones near the best
configuration so far. A row that converges, stalls or runs out of iterations is replaced while
the others step on, until enough solutions are found or the deadline passes (monotonic clock).
Only a configuration whose errors are within both tolerances is a success; otherwise the best
one found is returned with ``success=False``.
"""
from dataclasses import dataclass, field
import math
import time

import numpy as np

from . import kinematics
from .exceptions import InvalidInputError, ShapeError
from .rotations import log_so3

_LAMBDA0 = 1e-6          # damping floor
_DAMPING = 0.1           # damping = _DAMPING * E + _LAMBDA0
_MAX_ITERATIONS = 12     # per attempt, before a restart
_STALL = 4               # iterations without a 0.1 % improvement before a restart
_BATCH = 8               # rows advanced together (the seed and other starting points)
_NULLSPACE_GAIN = 0.3
_SIGMA = 0.3             # spread [rad or m] of the restarts drawn near the best so far
_DRAWS = 64              # random starting points drawn at a time
_SEED_GRACE = 3          # iterations the seed's row may still take once a solution is found
_DISTINCT = 1e-3         # [rad or m] solutions closer than this are the same
_CLOSE = 1e-4            # cost of a row that is about to converge (errors ~1 cm, rad) ...
_FAST = 0.01             # ... when its last step also cut its cost by this factor or more
_QUEUED = 16             # seed-table configurations queued for restarts


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


_EYE3 = np.eye(3)
_TWO_PI = 2.0 * np.pi
# Squared errors (B, 6) times this: |position error|^2, |angle|^2 and the cost e^T e / 2.
_SUMS = np.zeros((6, 3))
_SUMS[:3, 0] = _SUMS[3:, 1] = 1.0
_SUMS[:, 2] = 0.5


def pose_error(T, T_target):
    """Error ``[p_target - p; log(R_target R^T)]`` in world axes: (6,) for a pose ``T``
    (4, 4), (B, 6) for poses (B, 4, 4).
    """
    T, T_target = np.asarray(T, dtype=float), np.asarray(T_target, dtype=float)
    if T.ndim == 2:
        return pose_error(T[None], T_target)[0]
    e = _PoseError(T_target)(T).copy()
    # Near pi the skew part fixes the angle but not the axis: take the full logarithm there.
    far = np.einsum('ij,ij->i', e[:, 3:], e[:, 3:]) > 2.5 ** 2
    if far.any():
        e[far, 3:] = log_so3(T_target[:3, :3] @ np.swapaxes(T[far, :3, :3], 1, 2))
    return e


# Flattened 4x4 entries (row-major): the z axis and the origin of a frame, rotated by one
# and by two places -- the factors of the cross product z x (p_tip - p) -- and the z axis.
_Z_AND_P = np.array([6, 10, 2, 10, 2, 6, 11, 3, 7, 7, 11, 3])
_P_ROTATED = np.array([11, 3, 7, 7, 11, 3])
_Z = np.array([2, 6, 10])


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
        C = np.array(place).reshape(len(joints), 4, 4)
        self.place = C
        # C_k R_z(x) = [c C_k[:, 0] + s C_k[:, 1], c C_k[:, 1] - s C_k[:, 0], C_k[:, 2:]] and
        # a prismatic joint adds x C_k[:, 2] to the last column: the entries of joint k's
        # transform are [cos x, sin x, 1, x] (n, B, 4) times the rows of ``basis`` (n, 4, 16).
        basis = np.zeros((len(joints), 4, 4, 4))
        basis[:, 0, :, :2] = C[..., :2]
        basis[:, 1, :, 0], basis[:, 1, :, 1] = C[..., 1], -C[..., 0]
        basis[:, 2, :, 2:] = C[..., 2:]
        basis[:, 3, :, 3] = np.where(model.joint_revolute[joints, None], 0.0, C[..., 2])
        self.basis = basis.reshape(len(joints), 4, 16)
        self.frame_placement = E
        self.revolute = model.joint_revolute[joints]
        self.all_revolute = bool(np.all(self.revolute))
        q_index = model.joint_q_index[joints]
        self.multiplier = model.joint_multiplier[joints]
        self.offset = model.joint_offset[joints]
        columns = model.mimic_matrix[joints]        # chain joint rates from independent ones
        # Chains without mimic joints read their joints' q directly.
        self.mimic = not (np.all(self.multiplier == 1.0) and np.all(self.offset == 0.0)
                          and len(set(q_index.tolist())) == len(joints))
        #: Independent joints that move the frame, in the order of the Jacobian's columns.
        self.moved = np.flatnonzero(columns.any(axis=0)) if self.mimic else q_index
        self.x_index = np.searchsorted(self.moved, q_index) if self.mimic else None
        self.mimic_rows = columns[:, self.moved].T.copy()          # (m, n_chain)
        lower, upper = model.lower_limits[self.moved], model.upper_limits[self.moved]
        #: Bounds of the moved joints' iterates (continuous joints: none) ...
        self.clip_lower = np.where(model.continuous[self.moved], -np.inf, lower)
        self.clip_upper = np.where(model.continuous[self.moved], np.inf, upper)
        #: ... and the range random starting points are drawn from (unbounded joints: a turn).
        self.lower = np.where(np.isfinite(lower), lower, -np.pi)
        self.upper = np.where(np.isfinite(upper), upper, np.pi)
        #: Moved joints whose position counts only modulo a turn inside limits a turn or more
        #: apart (revolute, not driving mimic joints): iterates may wrap across those limits.
        turns = (self.upper - self.lower >= _TWO_PI - 1e-9) & np.isfinite(lower)
        turns &= model.joint_revolute[joints] if not self.mimic else False
        self.turns = np.flatnonzero(turns) if turns.any() else None
        self.clip_lower[turns], self.clip_upper[turns] = -np.inf, np.inf   # wrapped instead
        self.turn_middle = 0.5 * (self.lower[turns] + self.upper[turns])

    def wrap(self, X):
        """Joints :attr:`turns` of ``X`` (B, m) moved by whole turns into the middle turn of
        their limits, in place (the pose does not change).
        """
        t = self.turns
        if t is not None:
            X[:, t] -= _TWO_PI * np.round((X[:, t] - self.turn_middle) / _TWO_PI)

    def pose_and_jacobian(self, Q):
        """``T_root_frame`` (B, 4, 4) and the world-aligned Jacobian (B, 6, len(moved)) at
        ``Q`` (B, nq), its columns those of the joints :attr:`moved` (the others are zero).
        """
        T, JT = self.evaluate(Q[:, self.moved])
        return T, np.swapaxes(JT, 1, 2)

    def evaluate(self, X):
        """``T_root_frame`` (B, 4, 4) and the transposed world-aligned Jacobian (B, m, 6) at
        ``X`` (B, m), the positions of the joints :attr:`moved`.
        """
        B, n = len(X), len(self.place)
        if n == 0:
            return np.broadcast_to(self.frame_placement, (B, 4, 4)), np.zeros((B, 0, 6))
        T, tip = self._frames(X)
        # Rows of J^T: [z_k x (p_tip - p_k), z_k] (revolute), [z_k, 0] (prismatic).
        flat = T.reshape(n, B, 16)
        zp = flat.take(_Z_AND_P, 2)
        d = tip.reshape(B, 16).take(_P_ROTATED, 1) - zp[..., 6:]
        zd = zp[..., :6] * d
        J = np.empty((n, B, 6))
        np.subtract(zd[..., :3], zd[..., 3:], out=J[..., :3])
        J[..., 3:] = flat.take(_Z, 2)
        if not self.all_revolute:
            prismatic = ~self.revolute
            J[prismatic, :, :3] = J[prismatic, :, 3:]
            J[prismatic, :, 3:] = 0.0
        JT = np.ascontiguousarray(J.transpose(1, 0, 2))
        return tip, (self.mimic_rows @ JT if self.mimic else JT)

    def poses(self, X):
        """``T_root_frame`` (B, 4, 4) at ``X`` (B, m), the positions of the joints
        :attr:`moved`.
        """
        if len(self.place) == 0:
            return np.broadcast_to(self.frame_placement, (len(X), 4, 4))
        return self._frames(X)[1]

    def _frames(self, X):
        """The z-aligned joint frames (n, B, 4, 4) and the frame's pose (B, 4, 4)."""
        n, B = len(self.place), len(X)
        x = X.take(self.x_index, 1) * self.multiplier + self.offset if self.mimic else X
        x = x.T
        terms = np.empty((n, B, 4))
        np.cos(x, out=terms[..., 0])
        np.sin(x, out=terms[..., 1])
        terms[..., 2] = 1.0
        if self.all_revolute:
            L = np.matmul(terms[..., :3], self.basis[:, :3])
        else:
            terms[..., 3] = x
            terms[~self.revolute, :, :2] = (1.0, 0.0)
            L = np.matmul(terms, self.basis)
        L = L.reshape(n, B, 4, 4)                # C_k R_z(x_k), or C_k shifted by x_k along z
        T = np.empty_like(L)                     # z-aligned joint frames in the root frame
        T[0] = L[0]
        for k in range(1, n):
            np.matmul(T[k - 1], L[k], out=T[k])
        return T, T[-1] @ self.frame_placement


def _check(model, tip_frame, T_target, q_seed, position_tolerance, orientation_tolerance,
           weights, timeout, max_solutions):
    model.frame_index(tip_frame)
    T_target = np.asarray(T_target, dtype=float)
    if T_target.shape != (4, 4):
        raise ShapeError(f'T_target: expected a 4x4 transform, got shape {T_target.shape}')
    if not np.isfinite(T_target).all():
        raise InvalidInputError('T_target: expected finite values')
    R = T_target[:3, :3]
    (a, b, c), (d, e, f), (g, h, i) = R.tolist()
    det = a * (e * i - f * h) - b * (d * i - f * g) + c * (d * h - e * g)   # in floats: fast
    if np.abs(R @ R.T - _EYE3).max() > 1e-6 or det < 0:
        raise InvalidInputError('T_target: the rotation part is not a rotation matrix')
    if q_seed is None:
        q_seed = model.middle_configuration()
    q_seed = kinematics.as_joint_vector(model, q_seed, 'q_seed')
    if q_seed.ndim != 1:
        raise ShapeError(f'q_seed: expected shape ({model.nq},), got {q_seed.shape}')
    for name, tol in (('position_tolerance', position_tolerance),
                      ('orientation_tolerance', orientation_tolerance)):
        if not (math.isfinite(tol) and tol > 0):
            raise InvalidInputError(f'{name}: expected a finite value > 0, got {tol}')
    if not (math.isfinite(timeout) and timeout > 0):
        raise InvalidInputError(f'timeout: expected a finite number of seconds > 0, got {timeout}')
    if int(max_solutions) < 1:
        raise InvalidInputError(f'max_solutions: expected >= 1, got {max_solutions}')
    if weights is None:
        return T_target, q_seed.copy(), np.ones(6)
    w = np.asarray(weights, dtype=float)
    if w.shape != (6,) or not np.all(np.isfinite(w)) or np.any(w < 0) or not np.any(w > 0):
        raise InvalidInputError('weights: expected 6 finite values >= 0 (x, y, z, rx, ry, rz), '
                                f'not all zero, got {np.asarray(weights).tolist()}')
    return T_target, q_seed.copy(), w.copy()


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
    search = _Search(model, model.ik_chain(tip_frame), model.ik_seed_table(tip_frame),
                     T_target, q_seed, w, position_tolerance, orientation_tolerance,
                     position_only, rng)
    timed_out = search.run(deadline, int(max_solutions))
    found = sorted(search.found, key=lambda s: np.linalg.norm(s[0] - q_seed))
    found = found[:int(max_solutions)]
    if found:
        q, p_err, o_err = found[0]
        message = f'converged ({len(found)} solution(s), {search.attempts} attempt(s))'
        return IKResult(q, True, p_err, o_err, search.iterations, search.attempts, message,
                        timed_out, [s[0] for s in found])
    _, x, p_err, o_err = search.best
    q = search.q(x)
    why = 'timed out' if timed_out else 'stopped'
    message = (f'{why} after {search.attempts} attempt(s), {search.iterations} iteration(s) '
               f'without reaching the tolerances; best position error {p_err:.3g} m, '
               f'orientation error {o_err:.3g} rad')
    return IKResult(q, False, float(p_err), float(o_err), search.iterations, search.attempts,
                    message, timed_out, [])


def _pose_error_rows():
    """``M = P + vec(R_target) Q`` (16, 7) of :class:`_PoseError`: ``P`` maps ``vec(T)`` to
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


class _PoseError:
    """Pose error against one target for a batch of poses in one matrix product.

    ``vec(T) M`` gives ``p_target - p``, ``sin(angle) axis`` (half the vector of the skew part
    of ``R_target R^T``) and ``cos(angle) = (trace - 1) / 2`` -- all affine in the entries of
    ``T``, whose last one is 1.
    """

    def __init__(self, T_target):
        self.M = (_POSITION_ROWS + T_target[:3, :3].ravel() @ _ROTATION_ROWS).reshape(16, 7)
        self.M[15, :3] = T_target[:3, 3]

    def __call__(self, T):
        """``[p_target - p; angle axis]`` (B, 6) in world axes for poses ``T`` (B, 4, 4)."""
        out = T.reshape(len(T), 16) @ self.M
        s = out[:, 3:6]
        sin = np.sqrt(np.einsum('ij,ij->i', s, s))
        s *= (np.arctan2(sin, out[:, 6]) / np.maximum(sin, 1e-300))[:, None]
        return out[:, :6]


class _Search:
    """State of one IK search: a batch of configurations of the joints that move the tip,
    advanced together.

    Row 0 starts at the seed and is pulled toward it in the task null space (redundant arms);
    the other rows start at the seed table's configurations nearest the target (if the frame
    has one, :meth:`RobotModel.prepare_ik`) or at random inside the limits, and so does every
    row that converges or stalls.
    """

    def __init__(self, model, chain, table, T_target, q_seed, w, p_tol, o_tol, position_only,
                 rng):
        self.chain, self.error, self.rng_seed = chain, _PoseError(T_target), rng
        self.q_seed, self.continuous = q_seed, model.continuous
        self.tol2 = np.array([p_tol ** 2, np.inf if position_only else o_tol ** 2])
        weighted = bool(np.any(w != 1.0))
        self.w = w if weighted else None
        # (6, 3): squared errors of a row times this give |dp|^2, |dtheta|^2 and the cost.
        self.sums = _SUMS
        if weighted:
            self.sums = _SUMS.copy()
            self.sums[:, 2] *= w
        a = self.active = chain.moved
        task_rank = 3 if position_only else int(np.count_nonzero(w))
        self.redundant = len(a) > task_rank
        self.found = []
        self.best = (np.inf, q_seed[a], np.inf, np.inf)
        self.iterations = 0
        self.attempts = _BATCH
        X = self.X = np.empty((_BATCH, len(a)))
        X[0] = np.minimum(np.maximum(q_seed[a], chain.clip_lower), chain.clip_upper)
        chain.wrap(X[:1])
        self.seed_x = X[0].copy()
        self.seed_row = True             # row 0 still iterates from the seed
        # Starting points queued for the other rows and their restarts: the table's nearest.
        self.queue = table.nearest(T_target, _BATCH - 1 + _QUEUED, position_only) \
            if table is not None else np.empty((0, len(a)))
        self.rng = None                  # random starting points: drawn in blocks when needed
        self.drawn = _DRAWS
        X[1:] = self._fresh(_BATCH - 1)
        self.best_cost = np.full(_BATCH, np.inf)
        self.stall = np.zeros(_BATCH, dtype=int)
        self.age = np.zeros(_BATCH, dtype=int)
        self.waited = 0
        self.seed_cost = np.inf          # row 0's cost at the previous iteration

    def q(self, x):
        """The full configuration for the values ``x`` of the searched joints, joints that
        count modulo a turn moved by whole turns toward the seed while inside their limits.
        """
        q = self.q_seed.copy()
        x = x.copy()
        turns = self.chain.turns
        if turns is not None:
            seed = self.q_seed[self.active[turns]]
            near = seed + (x[turns] - seed + np.pi) % _TWO_PI - np.pi
            inside = (near >= self.chain.lower[turns]) & (near <= self.chain.upper[turns])
            x[turns[inside]] = near[inside]
        q[self.active] = x
        return _near_seed(q, self.q_seed, self.continuous)

    def run(self, deadline, max_solutions):
        """Iterate until enough solutions or the deadline; returns True when timed out."""
        X, m = self.X, self.X.shape[1]
        while True:
            T, JT = self.chain.evaluate(X)
            e = self.error(T)
            sums = (e * e) @ self.sums      # per row: |position error|^2, |angle|^2, cost
            within = sums[:, :2] <= self.tol2
            ok = within[:, 0] & within[:, 1]
            cost = sums[:, 2]
            self._record(ok, sums)
            # Enough solutions -- but while the seed's own row is about to converge (close and
            # closing in fast), give it a few more iterations: its solution is the one nearest
            # the seed.
            seed_cost, self.seed_cost = self.seed_cost, float(cost[0])
            if len(self.found) >= max_solutions:
                if not (self.seed_row and not ok[0] and cost[0] < _CLOSE
                        and cost[0] < _FAST * seed_cost) or self.waited >= _SEED_GRACE:
                    return False
                self.waited += 1
            if time.monotonic() >= deadline:
                return True
            done = self._progress(ok, cost)
            JtW = JT if self.w is None else JT * self.w
            rhs = JtW @ e[:, :, None]
            # Joints at a limit that the gradient pushes outward are held (their columns
            # dropped): the others then take the whole step instead of one clipped afterwards.
            held = (X <= self.chain.clip_lower) & (rhs[..., 0] < 0.0)
            held |= (X >= self.chain.clip_upper) & (rhs[..., 0] > 0.0)
            if held.any():
                free = ~held[..., None]
                JT = JT * free
                JtW = JtW * free
                rhs *= free
            A = JtW @ np.swapaxes(JT, 1, 2)
            damping = _DAMPING * cost + _LAMBDA0
            A.reshape(len(A), m * m)[:, ::m + 1] += damping[:, None]
            if self.redundant and self.seed_row and not done[0]:
                # Toward the seed with the step's own damping as weight: (A) dq = ... +
                # g lambda (q_seed - q) moves by g (q_seed - q) in the task's null space and
                # by almost nothing across it (the classic damped-least-squares secondary task).
                rhs[0, :, 0] += (_NULLSPACE_GAIN * damping[0]) * (self.seed_x - X[0])
            X += np.linalg.solve(A, rhs)[..., 0]
            self.chain.wrap(X)
            np.maximum(X, self.chain.clip_lower, out=X)
            np.minimum(X, self.chain.clip_upper, out=X)
            self.iterations += len(X)
            if done.any():           # the other rows have stepped on meanwhile
                self._restart(np.flatnonzero(done))

    def _record(self, ok, sums):
        if ok.any():
            for i in np.flatnonzero(ok):
                _add_solution(self.found, self.q(self.X[i]), *np.sqrt(sums[i, :2]))
        k = int(np.argmin(sums[:, 2]))
        if sums[k, 2] < self.best[0]:
            self.best = (sums[k, 2], self.X[k].copy(), *np.sqrt(sums[k, :2]))

    def _progress(self, ok, cost):
        """Rows to restart (converged, stalled or out of iterations), after bookkeeping."""
        improved = cost < self.best_cost * (1.0 - 1e-3)
        self.stall += 1
        self.stall[improved] = 0
        np.minimum(self.best_cost, cost, out=self.best_cost)
        self.age += 1
        # Rows about to converge keep going past the iteration budget while they improve.
        return ok | (self.stall >= _STALL) | ((self.age >= _MAX_ITERATIONS) & (cost > _CLOSE))

    def _fresh(self, count):
        """``count`` starting points: the queued ones first, then alternately anywhere inside
        the limits and near the best configuration so far.
        """
        taken, self.queue = self.queue[:count], self.queue[count:]
        more = count - len(taken)
        if more == 0:
            return taken
        lo, hi = self.chain.lower, self.chain.upper
        if self.drawn + more > _DRAWS:
            if self.rng is None:
                self.rng = np.random.default_rng(self.rng_seed)
            self.uniform = self.rng.uniform(lo, hi, size=(_DRAWS, len(lo)))
            self.noise = self.rng.normal(scale=_SIGMA, size=(_DRAWS, len(lo)))
            self.drawn = 0
        fresh = self.uniform[self.drawn:self.drawn + more].copy()
        if np.isfinite(self.best[0]):
            near = fresh[self.drawn % 2::2]
            np.add(self.best[1], self.noise[self.drawn:self.drawn + len(near)], out=near)
            np.maximum(near, lo, out=near)
            np.minimum(near, hi, out=near)
        self.drawn += more
        return np.concatenate([taken, fresh]) if len(taken) else fresh

    def _restart(self, rows):
        self.X[rows] = self._fresh(len(rows))
        self.seed_row &= rows[0] != 0
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
