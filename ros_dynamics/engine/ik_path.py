"""Inverse kinematics of a whole Cartesian path: one branch followed from pose to pose.

:func:`solve_path` answers ``N`` tip poses at once. A chain with an analytic family
(:mod:`~ros_dynamics.engine.ik_analytic`) solves every pose in one batched call, all branches
together; the path then starts on the solution nearest the seed and, pose after pose, takes the
solution nearest the previous one (each joint moved by whole turns toward it inside its limits).
A chain of more than six joints with a family once the others are held
(:mod:`~ros_dynamics.engine.ik_held`) tries that, with the held joints at the seed's values all
along. Other chains, and from the pose where that fails those and the approximate families (a
snapped geometry, subproblem 6's roots: a tangency at a limit can round out), iterate damped
least squares on :data:`BLOCK` poses at once, each block starting from the last solution before
it (where the joint velocity leads); from a pose that misses the tolerances, a limit or the step
bound -- and an analytic path at the wrist singularity -- they solve pose after pose
(:meth:`IKSolver.solve`: restarts, the active set at limits), each seeded with the previous
solution. Either way a path is a success only when every pose is reached within the
tolerances and no joint moves more than ``max_joint_step`` between consecutive poses: a larger
jump means the arm would have to change branch (pass a singularity or a limit), and the path
fails naming the first pose where that happens, with the poses before it solved. Where one
answer jumps, the pose is approached from the previous answer through poses between, then
the nearest of several solutions is taken (:func:`_nearer_answer`). A redundant arm carries
its posture from pose to pose (the null space pulled toward the previous answer), with no
preference for the middle of the limits: a long path can drift into a limit or a singularity
that another posture would have passed, and then fails there (a review's lines made from
straight joint-space motions: 3 of 40 on Baxter's arm, 4 of 30 on TALOS's, 2 of 30 on PR2's,
the arm 0.9-2.4 rad from the motion's configuration where they stopped).
"""
from dataclasses import dataclass, replace
import math
import time

import numpy as np

from . import configuration, ik_analytic, ik_held, kinematics
from .exceptions import ShapeError
from .ik_answers import joint_bounds, moved_back, near_zero, seed_in_a_turn, seed_result
from .ik_chain import LIMIT_SLACK, TANGENT_SLACK
from .ik_requests import (
    DEFAULT_MAX_JOINT_STEP,
    active_mask,
    check_step,
    check_targets,
    check_tolerance,
    seconds,
)
from .ik_search import damped_step, error_norms, pose_error
from .rotations import exp_so3, log_so3
from .spatial import inverse_transform


@dataclass
class PathResult:
    """Outcome of :func:`solve_path`.

    q (N, nq): a configuration per pose (rows from ``solved`` on repeat the last solved one,
    the seed if none); success: every pose solved with no jump; solved: poses solved in order
    before the first failure (N on success); position_error [m], orientation_error [rad] (N,)
    of ``q`` (NaN from ``solved`` on); max_joint_step: the largest joint move between
    consecutive solved poses; method: 'analytic <family>' or 'pose by pose (<the solves'
    methods>)'; message.
    """

    q: np.ndarray
    success: bool
    solved: int
    position_error: np.ndarray
    orientation_error: np.ndarray
    max_joint_step: float
    method: str
    message: str


def solve_path(solver, tip_frame, T_targets, q_seed=None, *, position_tolerance=1e-5,
               orientation_tolerance=1e-5, max_joint_step=DEFAULT_MAX_JOINT_STEP,
               active_joints=None, timeout=1.0):
    """Joint positions (a :class:`PathResult`) putting ``tip_frame`` at each of ``T_targets``
    (N, 4, 4), ``T_world_tip``, in order, on one branch (see the module docstring). ``solver``:
    the model's :class:`~ros_dynamics.engine.ik.IKSolver`; ``q_seed`` (nq,): where the robot is
    (default: the middle of the limits); tolerances [m], [rad]; ``max_joint_step`` [rad or m];
    ``active_joints`` as for :meth:`IKSolver.solve`; ``timeout`` [s]: the budget of the whole
    path (the numerical path's; an analytic path takes what it takes, a few microseconds a pose).
    """
    model = solver.model
    deadline = time.monotonic() + seconds(timeout)
    model.frame_index(tip_frame)
    T = check_targets(T_targets)
    step = check_step(max_joint_step)
    check_tolerance('position_tolerance', position_tolerance)
    check_tolerance('orientation_tolerance', orientation_tolerance)
    q_seed = configuration.middle_configuration(model) if q_seed is None else q_seed
    q_seed = np.array(kinematics.as_configuration(model, q_seed, 'q_seed'))
    if q_seed.shape != (model.nq,):
        raise ShapeError(f'q_seed: expected shape ({model.nq},), got {q_seed.shape}')
    chain = solver.chain(tip_frame)
    active = active_mask(model, chain, active_joints)
    T_root = T
    if chain.root_body:
        T_world_root = kinematics.forward_kinematics(model, q_seed).T_world_body[chain.root_body]
        T_root = inverse_transform(T_world_root) @ T
    tolerances = (position_tolerance, orientation_tolerance)
    turned = seed_in_a_turn(chain, q_seed, active)
    if turned is None:
        return _solved(solver, chain, T, T_root, q_seed, active, active_joints, tolerances,
                       step, deadline)
    wrapped, index = turned
    result = _solved(solver, chain, T, T_root, wrapped, active, active_joints, tolerances,
                     step, deadline)
    return _turned_back(model, result, chain, q_seed, wrapped, index, T_root, tolerances)


def _turned_back(model, result, chain, q_seed, wrapped, index, T, tolerances):
    """``result`` of a path from ``wrapped`` (:func:`~ros_dynamics.engine.ik_answers.
    seed_in_a_turn` of ``q_seed``, which brought the angles ``index`` within half a turn of
    zero) moved back by the turns between the two (:func:`~ros_dynamics.engine.ik_answers.
    moved_back`, every pose by the same turns), each solved pose checked again against ``T``
    (N, 4, 4, the chain's root frame): the move rounds the angles to the spacing of doubles at
    the seed's size. Where that takes a pose beyond the ``tolerances`` or the limits, the whole
    path stays within a turn of zero (the same motion of the arm), and the message says so.
    """
    Q, inside = moved_back(model, result.q, q_seed, wrapped, index, together=True)
    p_err, o_err = _errors(chain, Q[:, chain.moved], T, result.solved)
    solved = slice(0, result.solved)
    within = (p_err[solved] <= tolerances[0]) & (o_err[solved] <= tolerances[1]) & \
        inside[solved]
    if within.all():
        return replace(result, q=Q, position_error=p_err, orientation_error=o_err)
    why = near_zero(model, q_seed, index, Q[solved][~within])
    return replace(result, message=f'{result.message}; {why}')


def _solved(solver, chain, T, T_root, q_seed, active, active_joints, tolerances, step,
            deadline):
    """:func:`solve_path` of a checked request: the world's targets ``T`` and the chain's
    root frame's ``T_root`` (N, 4, 4), ``q_seed`` (nq,) with its unbounded angles within
    half a turn of zero.
    """
    model, tip_frame = solver.model, chain.frame
    position_tolerance, orientation_tolerance = tolerances
    family = solver._family(chain, q_seed, active)
    held = solver._held_joints(chain) if family is None and active is None else None
    if family is None and held is None:
        start = _batched(model, chain, T_root, q_seed, None, active, position_tolerance,
                         orientation_tolerance, step, deadline)
        if start.success:
            return start
        return _pose_by_pose(solver, tip_frame, T, q_seed, position_tolerance,
                             orientation_tolerance, step, active_joints, deadline,
                             start if start.solved else None)
    if family is not None:
        result = _analytic(model, chain, family, T_root, q_seed, active, position_tolerance,
                           orientation_tolerance, step)
        if result is None:
            return _pose_by_pose(solver, tip_frame, T, q_seed, position_tolerance,
                                 orientation_tolerance, step, active_joints, deadline)
        if result.success or not family.approximate:
            return result
        # An approximate family (a snapped geometry, subproblem 6's roots) can miss a pose by
        # rounding -- a tangency at a limit, a knee straight at its stop -- or lose a branch
        # near a singularity (a snapped geometry's solutions tenths of a radian off): on from
        # there by the batched numerical iteration, then pose by pose from where that stops
        # if the family has a solution there (a pose out of reach or the limits would be
        # searched to the budget, 50 ms where the analytic path took 3).
        batched = _batched(model, chain, T_root, q_seed, result, active, position_tolerance,
                           orientation_tolerance, step, deadline)
        best = batched if batched.solved > result.solved else result
        if best.success or not _solved_inside(model, chain, family, T_root, q_seed, active,
                                              position_tolerance, orientation_tolerance, best):
            return best
        return _pose_by_pose(solver, tip_frame, T, q_seed, position_tolerance,
                             orientation_tolerance, step, active_joints, deadline, best,
                             numerical=False)
    else:
        # More than six joints: the held ones stay at the seed's values all along when they
        # can ...
        result = _analytic(model, chain, held, T_root, q_seed, active, position_tolerance,
                           orientation_tolerance, step)
        if result.success:
            return result
    # ... else, from the first pose they cannot reach, by the batched numerical iteration,
    # which moves them, and what that leaves pose by pose.
    result = _batched(model, chain, T_root, q_seed, result, active, position_tolerance,
                      orientation_tolerance, step, deadline)
    if result.success:
        return result
    return _pose_by_pose(solver, tip_frame, T, q_seed, position_tolerance,
                         orientation_tolerance, step, active_joints, deadline, result)


def _analytic(model, chain, family, T, q_seed, active, p_tol, o_tol, step):
    """The path of a :class:`~ros_dynamics.engine.ik_analytic.Family` (six joints), or of
    :class:`~ros_dynamics.engine.ik_held.HeldJoints` with the held joints at the seed's values.
    Poses are solved :data:`CHUNK` at a time (memory stays bounded on long paths). None when a
    family's path meets the wrist singularity (:func:`_through_singularity`): it is then
    solved pose by pose.
    """
    N = len(T)
    x_seed = q_seed[chain.moved]
    if isinstance(family, ik_held.HeldJoints):
        joints = ', '.join(model.q_names[i] for i in chain.moved[family.held])
        method = f'analytic {family.family.name}, {joints} held'
    else:
        method = f'analytic {family.name}'
    X = np.empty((N, 8, len(x_seed)))
    ok = np.empty((N, 8), dtype=bool)
    checked = False
    for start in range(0, N, CHUNK):
        part = slice(start, start + CHUNK)
        X[part], ok[part], checked = _solutions(chain, family, T[part], x_seed, active, p_tol,
                                                o_tol, check=False)
    limits = joint_bounds(model, chain, x_seed, active)
    # A seed that reaches the first pose is its solution, one more candidate there: with joints
    # held, at a singular configuration of the six no branch need be the seed (where the next
    # pose has none near it, the path goes on pose by pose); a snapped geometry's branches near
    # its wrist singularity can be tenths of a radian off the seed's; an exact one's, at a
    # tolerance below its rounding, a hair past a limit that clipping moves off the pose.
    held = isinstance(family, ik_held.HeldJoints)
    at_seed = seed_result(model, chain, T[0], q_seed, p_tol, o_tol) is not None
    path, solved, message, largest = _follow(*_with_seed(X, ok, x_seed, at_seed), x_seed,
                                             limits, step)
    pe, oe = _errors(chain, path, T, solved)
    if not checked and np.any((pe[:solved] > p_tol) | (oe[:solved] > o_tol)):
        # A branch flagged exact but off (rounding at a singularity): check every branch.
        for start in range(0, N, CHUNK):
            part = slice(start, start + CHUNK)
            X[part], ok[part], _ = _solutions(chain, family, T[part], x_seed, active, p_tol,
                                              o_tol, check=True)
        path, solved, message, largest = _follow(*_with_seed(X, ok, x_seed, at_seed), x_seed,
                                                 limits, step)
        pe, oe = _errors(chain, path, T, solved)
    if not held and _through_singularity(family, path[:solved], X[solved:solved + 1], active):
        return None
    # A solution a hair past a limit (a tangency there: subproblem 6's root, an arccos near 1)
    # was clipped in; where that puts the tip off the target, the path stops.
    off = np.flatnonzero((pe[:solved] > p_tol) | (oe[:solved] > o_tol))
    if len(off):
        solved = int(off[0])
        message = (f'pose {solved}: its solution clipped into the joint limits misses the '
                   f'tolerances (position error {pe[solved]:.3g} m, orientation error '
                   f'{oe[solved]:.3g} rad)')
        pe[solved:], oe[solved:] = np.nan, np.nan
        largest = float(np.abs(np.diff(path[:solved], axis=0)).max()) if solved > 1 else 0.0
    if solved < N:
        path[solved:] = path[solved - 1] if solved else x_seed
    q = np.repeat(q_seed[None], N, axis=0)
    q[:, chain.moved] = path
    message = message or f'{method}: {N} poses, largest joint step {largest:.3g}'
    return PathResult(q, solved == N, solved, pe, oe, largest, method, message)


def _solved_inside(model, chain, family, T, q_seed, active, p_tol, o_tol, result):
    """Whether ``family`` has a solution for the pose of ``T`` (N, 4, 4) where the path
    ``result`` stopped -- inside the limits, unless the geometry was snapped (near a
    singularity its solutions can be tenths of a radian off the true ones, the branch the path
    lost among them, and too far for polishing to reach: a pose the snapped geometry reaches
    exactly counts).
    """
    n, moved = result.solved, chain.moved
    X, ok, _ = _solutions(chain, family, T[n:n + 1], q_seed[moved], active, p_tol, o_tol,
                          check=False)
    if family.snapped:
        return bool(ok.any() or family.solve(T[n:n + 1, :3, :3], T[n:n + 1, :3, 3])[1].any())
    x_prev = result.q[n - 1, moved] if n else q_seed[moved]
    ok &= ik_analytic.in_limits(X[0], x_prev, *joint_bounds(model, chain, x_prev, active),
                                TANGENT_SLACK)[1]
    return bool(ok.any())


def _through_singularity(family, path, failed, active):
    """Whether ``path`` (n, m) followed by the six joints of ``family`` meets the wrist
    singularity, or the solutions ``failed`` (0 or 1, 8, m) of the pose it stopped at are there:
    the branch followed is then one arbitrary point of a continuum at those poses.
    """
    cols = slice(None) if active is None else active
    return bool(family.singular(path[:, cols]).any() or family.singular(failed[..., cols]).any())


#: Poses solved together by an analytic path (bounds the memory of long paths).
CHUNK = 1024


def _with_seed(X, ok, x_seed, at_seed):
    """The solutions ``X`` (N, S, m) and which to use ``ok`` (N, S), with the seed (m,) as one
    more solution of the first pose when ``at_seed``.
    """
    if not at_seed:
        return X, ok
    X = np.concatenate([X, np.broadcast_to(x_seed, (len(X), 1, len(x_seed)))], axis=1)
    ok = np.concatenate([ok, np.zeros((len(ok), 1), dtype=bool)], axis=1)
    ok[0, -1] = True
    return X, ok


#: [m or rad] A path polishes the branches whose pose is off by less than this (their largest
#: error component): a snapping's or a rounded tangency's, not a least-squares branch's of a
#: pose out of the arm's reach, which would take every step.
POLISH_NEAR = 5e-3


def _solutions(chain, family, T, x_seed, active, p_tol, o_tol, check):
    """The eight solutions (n, 8, m) of each pose of ``T`` (n, 4, 4), which to use (n, 8), and
    whether they were all checked on the chain. A snapped geometry's solutions are polished and
    checked; subproblem 6's exact ones count as solutions (their roots are accurate to about
    1e-10) and its least-squares ones (a straight elbow: a tangency that rounding can tip over)
    are polished and checked; all are checked when ``check``; else an exact branch counts as
    a solution.
    """
    n = len(T)
    act = np.ones(len(x_seed), dtype=bool) if active is None else active.copy()
    X = np.repeat(x_seed[None], n * 8, axis=0)
    if isinstance(family, ik_held.HeldJoints):
        Q, exact = family.solve_path(T, x_seed[family.held])                  # (n, 8, m)
        X[:] = Q.reshape(n * 8, -1)
        act[family.held] = False                 # polishing leaves the held joints alone
        family = family.family
    else:
        Q, exact = family.solve(T[:, :3, :3], T[:, :3, 3])                  # (n, 8, 6)
        X[:, act] = Q.reshape(n * 8, -1)
    T_rows = np.repeat(T, 8, axis=0)
    exact = exact.ravel()
    finite = np.isfinite(X).all(axis=1)                  # NaN: no pose (subproblem 6)
    checked = check or family.snapped
    if checked:                                          # every branch, on the chain
        rows, ok = finite, np.zeros(len(X), dtype=bool)
    else:                # exact branches count; subproblem 6's least-squares ones are checked
        rows, ok = finite & ~exact & family.approximate, exact.copy()
    if rows.any():
        part = X[rows]
        if family.approximate:
            # Well inside the tolerances: near a straight elbow a pose 1e-6 off leaves a joint
            # 2e-5 rad off, past its stop when the solution is at it (one more step, 5 %).
            e = ik_analytic.polish(chain, part, T_rows[rows], act, 1e-3 * min(p_tol, o_tol),
                                   settle=False, near=POLISH_NEAR)
            X[rows] = part
            ok[rows] = (np.linalg.norm(e[:, :3], axis=1) <= p_tol) & \
                (np.linalg.norm(e[:, 3:], axis=1) <= o_tol)
        else:
            ok[rows] = _within(chain, part, T_rows[rows], p_tol, o_tol)
    return X.reshape(n, 8, -1), ok.reshape(n, 8), checked


def _errors(chain, path, T, solved):
    """Position and orientation errors (N,) of the first ``solved`` rows of ``path``, NaN
    after.
    """
    N = len(T)
    pe, oe = np.full(N, np.nan), np.full(N, np.nan)
    for start in range(0, solved, CHUNK):
        part = slice(start, min(start + CHUNK, solved))
        pe[part], oe[part] = error_norms(chain.poses(path[part]), T[part])
    return pe, oe


def _within(chain, X, T_rows, p_tol, o_tol):
    """Which rows of ``X`` (B, m) put the tip within the tolerances of ``T_rows`` (B, 4, 4)."""
    p_err, o_err = error_norms(chain.poses(X), T_rows)
    return (p_err <= p_tol) & (o_err <= o_tol)


def _follow(X, ok, x_seed, limits, step):
    """One branch through the solutions ``X`` (N, S, m) where ``ok`` (N, S), inside
    ``limits`` (lower (m,), upper (m,), turning (m,): as
    :func:`~ros_dynamics.engine.ik_analytic.in_limits`): the path (N, m), the poses followed,
    the failure's message ('' if none) and the largest step.

    The first pose takes the solution nearest the seed (moved by turns inside the limits);
    then each pose the solution nearest the previous one, all of them at once: nearest in
    ``sum_j 1 - cos(b_j - a_j)`` over the joints (half the squared chord distance, blind to
    whole turns), whose ``sum_j cos(b_j - a_j) = [cos a, sin a] . [cos b, sin b]`` makes every
    pair of consecutive poses' solutions one small matrix product; the branch is read off
    those, and its largest joint move (each joint by the nearest turn) checked against
    ``step``: where it is above, the solution of least largest move is taken there instead,
    and the path stops when that one is above too. When the angles so followed leave a joint's
    limits (a joint of a turn or more of range crossing a turn), the path is followed again
    pose by pose, each solution moved by turns inside the limits.
    """
    N = len(X)
    path = np.empty((N, X.shape[2]))
    lower, upper, turning = limits
    first, inside, _ = ik_analytic.in_limits(X[0], x_seed, lower, upper, turning,
                                             TANGENT_SLACK)
    usable = ok[0] & inside
    if not usable.any():
        return path, 0, _why(0, ok[0]), 0.0
    moves = np.abs(first - x_seed).max(axis=1)
    moves[~usable] = np.inf
    s = int(np.argmin(moves))
    path[0] = first[s]
    # Per pair of consecutive poses (N-1, from, to): sum_j cos(b_j - a_j), -inf where the
    # next solution is not one; a CHUNK of poses at a time (bounded temporaries).
    similar = np.empty((N - 1, X.shape[1], X.shape[1]))
    for start in range(0, N - 1, CHUNK):
        stop = min(start + CHUNK, N - 1)
        part = X[start:stop + 1]
        CS = np.concatenate([np.cos(part), np.sin(part)], axis=2)           # (n + 1, 8, 2m)
        np.matmul(CS[:-1], CS[1:].transpose(0, 2, 1), out=similar[start:stop])
    similar[~np.broadcast_to(ok[1:, None, :], similar.shape)] = -np.inf
    to, reachable = similar.argmax(axis=2).tolist(), (similar > -np.inf).any(axis=2).tolist()
    del similar
    branch = [s]
    while True:
        # Read the branch off the table from its last solution ...
        solved, message = N, ''
        for n in range(len(branch) - 1, N - 1):
            if not reachable[n][branch[-1]]:
                solved, message = n + 1, _why(n + 1, ok[n + 1])
                break
            branch.append(to[n][branch[-1]])
        steps = _moves(X, branch, turning)
        jumps = np.abs(steps).max(axis=1)
        over = np.flatnonzero(jumps > step)
        if not len(over):
            break
        # ... and where its move is above the bound, take the solution of least largest joint
        # move there (the table's pick need not be it), else the path stops there.
        n = int(over[0])
        moves = X[n + 1] - X[n, branch[n]]
        moves -= _TURN * np.round(moves / _TURN) * turning
        largest = np.where(ok[n + 1], np.abs(moves).max(axis=1), np.inf)
        k = int(np.argmin(largest))
        del branch[n + 1:]
        if largest[k] > step:
            solved, message = n + 1, (
                f'pose {n + 1}: the branch must change (the nearest solution moves a joint '
                f'{largest[k]:.3g}, more than max_joint_step {step:g})')
            break
        branch.append(k)
    if len(steps) != len(branch) - 1:                  # the branch was cut
        steps = _moves(X, branch, turning)
        jumps = np.abs(steps).max(axis=1)
    largest = float(jumps.max()) if len(jumps) else 0.0
    path[1:solved] = path[0] + np.cumsum(steps, axis=0)
    # Inside, or a rounding past a limit (a pose at it, whose steps summed): clipped in.
    if np.all((path[:solved] >= lower - LIMIT_SLACK) & (path[:solved] <= upper + LIMIT_SLACK)):
        np.clip(path[:solved], lower, upper, out=path[:solved])
        return path, solved, message, largest
    return _follow_in_limits(X, ok, x_seed, limits, step)


def _moves(X, branch, turning):
    """The joint moves (len(branch) - 1, m) along ``branch`` (a solution index per pose) of
    ``X`` (N, S, m), angles by the nearest turn.
    """
    chosen = X[np.arange(len(branch)), branch]
    steps = np.diff(chosen, axis=0)
    steps -= _TURN * np.round(steps / _TURN) * turning
    return steps


def _follow_in_limits(X, ok, x_seed, limits, step):
    """:func:`_follow` pose by pose, each solution moved by turns inside the limits."""
    N = len(X)
    path = np.empty((N, X.shape[2]))
    prev, largest = x_seed, 0.0
    for n in range(N):
        shifted, inside, _ = ik_analytic.in_limits(X[n], prev, *limits, TANGENT_SLACK)
        usable = ok[n] & inside
        if not usable.any():
            return path, n, _why(n, ok[n]), largest
        moves = np.abs(shifted[usable] - prev).max(axis=1)
        k = int(np.argmin(moves))
        if n and moves[k] > step:
            return path, n, (f'pose {n}: the branch must change (the nearest solution moves a '
                             f'joint {moves[k]:.3g}, more than max_joint_step {step:g})'), largest
        if n:
            largest = max(largest, float(moves[k]))
        path[n] = prev = shifted[usable][k]
    return path, N, '', largest


def _why(n, ok):
    return f'pose {n}: ' + ('no configuration reaches it' if not ok.any() else
                            'its solutions are outside the joint limits')


_TURN = 2.0 * math.pi


#: Poses the batched numerical path iterates together, each block starting from the last
#: solution of the one before (a continuation: 1 mm apart, a block spans a few cm).
BLOCK = 64
#: Damped least-squares iterations a block gets before its unconverged poses go pose by pose.
BLOCK_ITERATIONS = 8


def _batched(model, chain, T, q_seed, start, active, p_tol, o_tol, step, deadline):
    """The path by damped least squares (the search's step, :mod:`.ik_search`) on
    :data:`BLOCK` poses at a time, every pose of a block starting from the last solution before
    it and pulled toward it in the task's null space (redundant arms keep their posture), the
    iterates inside the joint limits -- for chains with no analytic family (and a held-joint
    path from the pose its held joints cannot reach: ``start``, the :class:`PathResult` whose
    solved poses are kept). ``T`` (N, 4, 4) in the chain's root frame. Stops at the first pose
    not reached within the tolerances (and :data:`BLOCK_ITERATIONS`), outside the limits, or
    more than ``step`` from the one before: a :class:`PathResult` of the poses before it, which
    the pose-by-pose search goes on from (singularities, limits: its restarts and active set).
    Joints outside ``active`` (m, bool; None: all) keep the seed's values.
    """
    N, moved = len(T), chain.moved
    q = np.repeat(q_seed[None], N, axis=0)
    pe, oe = np.full(N, np.nan), np.full(N, np.nan)
    solved, largest, methods = 0, 0.0, []
    if start is not None and start.solved:
        solved, largest = start.solved, start.max_joint_step
        q[:solved], pe[:solved], oe[:solved] = (start.q[:solved], start.position_error[:solved],
                                                start.orientation_error[:solved])
        methods.append(start.method)
    first = solved
    x_seed = q_seed[moved]
    prev = q[solved - 1, moved] if solved else x_seed
    # Joints outside ``active`` keep the seed's values: their bounds are those values.
    lower, upper, _ = joint_bounds(model, chain, x_seed, active)
    clip = (chain.clip_lower, chain.clip_upper) if active is None else (lower, upper)
    redundant = (len(moved) if active is None else int(np.count_nonzero(active))) > 6
    stopped = False
    why = ''
    while solved < N and not stopped and time.monotonic() < deadline:
        block = slice(solved, min(solved + BLOCK, N))
        # Each pose starts where the last solved poses' joint velocity leads (a straight
        # line's configurations change at an almost steady rate), none before two are solved.
        velocity = q[solved - 1, moved] - q[solved - 2, moved] if solved >= 2 else None
        X, p_err, o_err, done = _block(chain, T[block], prev, velocity, clip, active,
                                       redundant, p_tol, o_tol, deadline)
        inside = np.all((X >= lower) & (X <= upper), axis=1)
        moves = np.abs(np.diff(np.concatenate([prev[None], X]), axis=0)).max(axis=1)
        if solved == 0:
            moves[0] = 0.0                     # the first pose may be anywhere from the seed
        good = done & inside & (moves <= step)
        n = len(X) if good.all() else int(np.argmin(good))
        if n < len(X):
            why = _block_failure(n, solved + n, done, inside, moves, step, p_err, o_err)
        if n:
            rows = slice(solved, solved + n)
            q[rows, moved] = X[:n]
            pe[rows], oe[rows] = p_err[:n], o_err[:n]
            largest = max(largest, float(moves[:n].max()))
            prev, solved = q[solved + n - 1, moved], solved + n
        stopped = n < len(X)
    if solved > first or not methods:
        methods.append('numerical batched')
    if solved < N:
        q[solved:] = q[solved - 1] if solved else q_seed
    method = ' then '.join(methods)
    if solved == N:
        message = f'{method}: {N} poses, largest joint step {largest:.3g}'
    else:
        message = why if stopped else f'pose {solved}: the time budget ran out'
    return PathResult(q, solved == N, solved, pe, oe, largest, method, message)


def _block_failure(k, pose, done, inside, moves, step, p_err, o_err):
    """Why row ``k`` of a block (``pose`` of the path) stopped :func:`_batched`."""
    if not done[k]:
        return (f'pose {pose}: not reached in {BLOCK_ITERATIONS} iterations (position error '
                f'{p_err[k]:.3g} m, orientation error {o_err[k]:.3g} rad)')
    if not inside[k]:
        return f'pose {pose}: its solution is outside the joint limits'
    return (f'pose {pose}: the branch must change (the solution moves a joint {moves[k]:.3g}, '
            f'more than max_joint_step {step:g})')


def _block(chain, T, x_start, velocity, clip, active, redundant, p_tol, o_tol, deadline):
    """Damped least squares for the poses ``T`` (n, 4, 4) from ``x_start`` (m,), the k-th
    pose from ``x_start + k velocity`` (velocity (m,) or None) and pulled toward it in the
    task's null space when ``redundant``, every iterate inside ``clip`` (lower (m,), upper
    (m,)), the joints outside ``active`` (m, bool; None: all) held: the configurations (n, m),
    their position and orientation errors (n,) and which converged (n,). Converged rows stop;
    the others step until :data:`BLOCK_ITERATIONS` or the ``deadline``.
    """
    n = len(T)
    X = np.repeat(x_start[None], n, axis=0)
    if velocity is not None:
        X += np.arange(1, n + 1)[:, None] * velocity
        np.clip(X, *clip, out=X)
    guess = X.copy()
    done = np.zeros(n, dtype=bool)
    p_err, o_err = np.full(n, np.inf), np.full(n, np.inf)
    rows = np.arange(n)
    for iteration in range(BLOCK_ITERATIONS + 1):
        if iteration or velocity is not None:
            T_rows, JT = chain.evaluate(X[rows])
        else:                           # every row at the start: one evaluation for all
            T_rows, JT = (np.repeat(a, n, axis=0) for a in chain.evaluate(x_start[None]))
        e = pose_error(T_rows, T[rows])
        p2 = np.einsum('bi,bi->b', e[:, :3], e[:, :3])
        o2 = np.einsum('bi,bi->b', e[:, 3:], e[:, 3:])
        p_err[rows], o_err[rows] = np.sqrt(p2), np.sqrt(o2)
        ok = (p2 <= p_tol * p_tol) & (o2 <= o_tol * o_tol)
        done[rows[ok]] = True
        if ok.all() or time.monotonic() >= deadline:
            break
        keep = ~ok
        rows, JT, e = rows[keep], JT[keep], e[keep]
        if active is not None:
            JT = JT * active[:, None]
        pull = guess[rows] - X[rows] if redundant else None
        X[rows] = np.clip(X[rows] + damped_step(JT, e, 0.5 * (p2[keep] + o2[keep]), pull),
                          *clip)
    return X, p_err, o_err, done


#: Poses between two of a path that :func:`_nearer_answer` tries to follow from the previous
#: answer, one after the other, where the one answer jumps: ...
FOLLOW_SPLITS = (1, 3, 7)
#: ... and, where none of those follows, the solutions one solve collects there.
FOLLOW_SOLUTIONS = 16


def _nearer_answer(solver, tip, T_prev, T_target, prev, p_tol, o_tol, active_joints,
                   deadline, step, jumped):
    """An answer for ``T_target`` (4, 4) nearer ``prev`` (nq, reaching ``T_prev``) than
    ``jumped`` (an :class:`IKResult` moving a joint past ``step`` from it), else ``jumped``.
    A chain of more than six joints answers once from the first start that converges, which
    can be a restart or the seed table's, radians away where a solution lies next to the seed
    whose own iteration did not reach it in one go (a review: Baxter's right arm on a line
    made from a straight joint-space motion failed at pose 86 of 100, 'the branch must
    change', 4.09 rad, where a solution lay 0.1 rad from the previous answer near the arm's
    singularity). So the pose is approached through :data:`FOLLOW_SPLITS` poses between
    (position along the line, rotation about one axis), each solved from the last answer and
    none moving a joint past ``step``; where that fails, the one of
    :data:`FOLLOW_SOLUTIONS` solutions of one solve seeded at ``prev`` that moves the joints
    least. By the ``deadline`` (monotonic clock): cut short there, ``jumped`` comes back
    marked timed out (the path then says its time budget ran out, not that the branch must
    change).
    """
    bound = float(np.abs(jumped.q - prev).max())
    turn = log_so3(T_prev[:3, :3].T @ T_target[:3, :3])
    for splits in FOLLOW_SPLITS:
        q, answer = prev, None
        for s in np.arange(1, splits + 2) / (splits + 1):
            left = deadline - time.monotonic()
            if left <= 0:
                return replace(jumped, timed_out=True)
            T_s = T_target.copy()
            if s < 1.0:
                T_s[:3, :3] = T_prev[:3, :3] @ exp_so3(s * turn)
                T_s[:3, 3] = (1.0 - s) * T_prev[:3, 3] + s * T_target[:3, 3]
            answer = solver.solve(tip, T_s, q, position_tolerance=p_tol,
                                  orientation_tolerance=o_tol, timeout=min(left, 0.05),
                                  active_joints=active_joints, max_solutions=1)
            if not answer.success or np.abs(answer.q - q).max() > step:
                answer = None
                break
            q = answer.q
        if answer is not None and np.abs(answer.q - prev).max() < bound:
            return answer
    left = deadline - time.monotonic()
    if left <= 0:
        return replace(jumped, timed_out=True)
    several = solver.solve(tip, T_target, prev, position_tolerance=p_tol,
                           orientation_tolerance=o_tol, timeout=min(left, 0.05),
                           active_joints=active_joints, max_solutions=FOLLOW_SOLUTIONS)
    moves = [float(np.abs(q - prev).max()) for q in several.solutions]
    k = int(np.argmin(moves)) if moves else 0
    left = deadline - time.monotonic()
    if moves and moves[k] < bound and left > 0:
        # Its errors: a seed that reaches its target is the answer.
        nearest = solver.solve(tip, T_target, several.solutions[k], position_tolerance=p_tol,
                               orientation_tolerance=o_tol, timeout=min(left, 0.05),
                               active_joints=active_joints, max_solutions=1)
        if nearest.success and np.abs(nearest.q - prev).max() < bound:
            return nearest
    # Cut short by the deadline, the jump says so (not that the branch must change).
    return replace(jumped, timed_out=True) if time.monotonic() >= deadline else jumped


def _pose_by_pose(solver, tip, T, q_seed, p_tol, o_tol, step, active_joints, deadline,
                  start=None, numerical=True):
    """The path solved pose after pose, each seeded with the previous answer; after the poses
    a :class:`PathResult` ``start`` solved (kept as they are), if given -- a held-joint path
    that failed: then by the numerical search (weights given, unless not ``numerical``),
    which moves the held joints, where the held-joint solve would hold them at the previous
    answer's values, as the failed path did.
    """
    N = len(T)
    q = np.repeat(q_seed[None], N, axis=0)
    pe, oe = np.full(N, np.nan), np.full(N, np.nan)
    prev, largest, message, solved, methods = q_seed, 0.0, '', N, set()
    first = start.solved if start is not None else 0
    weights = np.ones(6) if start is not None and numerical else None
    before = f'{start.method} then ' if first else ''
    if first:
        q[:first], pe[:first], oe[:first] = (start.q[:first], start.position_error[:first],
                                             start.orientation_error[:first])
        prev, largest = q[first - 1], start.max_joint_step
    for n in range(first, N):
        left = deadline - time.monotonic()
        if left <= 0:
            message, solved = f'pose {n}: the time budget ran out', n
            break
        r = solver.solve(tip, T[n], prev, position_tolerance=p_tol, orientation_tolerance=o_tol,
                         timeout=min(left, 0.05), active_joints=active_joints, max_solutions=1)
        left = deadline - time.monotonic()
        if weights is not None and left > 0 and (not r.success or
                                                 np.abs(r.q - prev).max() > step):
            # The held joints at the previous answer's values (and, failing that, the previous
            # answer iterated: the closed form's far branches joined) did not follow; the
            # numerical search alone moves every joint from the start.
            searched = solver.solve(tip, T[n], prev, position_tolerance=p_tol,
                                    orientation_tolerance=o_tol, timeout=min(left, 0.05),
                                    active_joints=active_joints, max_solutions=1,
                                    weights=weights)
            if searched.success and (not r.success or np.abs(searched.q - prev).max() <
                                     np.abs(r.q - prev).max()):
                r = searched
        if n and r.success and np.abs(r.q - prev).max() > step:
            r = _nearer_answer(solver, tip, T[n - 1], T[n], prev, p_tol, o_tol, active_joints,
                               deadline, step, r)
        methods.add(r.method)
        if not r.success:
            why = 'the time budget ran out' if r.timed_out and time.monotonic() >= deadline \
                else r.message
            message, solved = f'pose {n}: {why}', n
            break
        move = float(np.abs(r.q - prev).max())
        if n and move > step:
            why = ('the time budget ran out (the answer found in time moves a joint '
                   if r.timed_out else 'the branch must change (the solution moves a joint ')
            message, solved = f'pose {n}: {why}{move:.3g}, more than max_joint_step {step:g})', n
            break
        if n:
            largest = max(largest, move)
        q[n], pe[n], oe[n], prev = r.q, r.position_error, r.orientation_error, r.q
    if solved < N:
        q[solved:] = q[solved - 1] if solved else q_seed
    method = f'{before}pose by pose' + (f' ({", ".join(sorted(methods))})' if methods else '')
    message = message or f'{method}: {N} poses, largest joint step {largest:.3g}'
    return PathResult(q, solved == N, solved, pe, oe, largest, method, message)
