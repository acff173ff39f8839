"""Inverse kinematics of a whole Cartesian path: one branch followed from pose to pose.

:func:`solve_path` answers ``N`` tip poses at once. A chain with an analytic family
(:mod:`~ros_dynamics.engine.ik_analytic`) solves every pose in one batched call, all branches
together; the path then starts on the solution nearest the seed and, pose after pose, takes the
solution nearest the previous one (each joint moved by whole turns toward it inside its limits).
Other chains solve pose after pose (:meth:`IKSolver.solve`: numerically, or analytically with
an end joint held for seven-joint arms), each seeded with the previous solution. Either
way a path is a success only when every pose is reached within the tolerances and no joint
moves more than ``max_joint_step`` between consecutive poses: a larger jump means the arm
would have to change branch (pass a singularity or a limit), and the path fails naming the
first pose where that happens, with the poses before it solved.
"""
from dataclasses import dataclass
import time

import numpy as np

from . import configuration, ik_analytic, kinematics
from .exceptions import ShapeError
from .ik_requests import (
    DEFAULT_MAX_JOINT_STEP,
    active_mask,
    check_step,
    check_targets,
    check_tolerance,
    seconds,
)
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
    family = solver._family(chain, q_seed, active)
    if family is None:
        return _pose_by_pose(solver, tip_frame, T, q_seed, position_tolerance,
                          orientation_tolerance, step, active_joints, deadline)
    if chain.root_body:
        T_world_root = kinematics.forward_kinematics(model, q_seed).T_world_body[chain.root_body]
        T = inverse_transform(T_world_root) @ T
    return _analytic(model, chain, family, T, q_seed, active, position_tolerance,
                     orientation_tolerance, step)


def _analytic(model, chain, family, T, q_seed, active, p_tol, o_tol, step):
    N = len(T)
    Q, _ = family.solve(T[:, :3, :3], T[:, :3, 3])               # (N, S, 6)
    S = Q.shape[1]
    act = np.ones(len(chain.moved), dtype=bool) if active is None else active
    x_seed = q_seed[chain.moved]
    X = np.repeat(x_seed[None], N * S, axis=0)
    X[:, act] = Q.reshape(N * S, -1)
    T_rows = np.repeat(T, S, axis=0)
    if family.snapped:
        ik_analytic.polish(chain, X, T_rows, act, 0.1 * min(p_tol, o_tol))
    e = ik_analytic.pose_errors(chain.poses(X), T_rows)
    p_err = np.linalg.norm(e[:, :3], axis=1).reshape(N, S)
    o_err = np.linalg.norm(e[:, 3:], axis=1).reshape(N, S)
    ok = (p_err <= p_tol) & (o_err <= o_tol)
    X = X.reshape(N, S, -1)
    lower, upper = model.lower_limits[chain.moved], model.upper_limits[chain.moved]
    path = np.empty((N, len(x_seed)))
    chosen = np.empty(N, dtype=int)
    prev, largest, message, solved = x_seed, 0.0, '', N
    for n in range(N):
        shifted, inside = ik_analytic.in_limits(X[n], prev, lower, upper)
        usable = ok[n] & inside
        if not usable.any():
            why = 'no configuration reaches it' if not ok[n].any() else \
                'its solutions are outside the joint limits'
            message, solved = f'pose {n}: {why}', n
            break
        moves = np.abs(shifted[usable] - prev).max(axis=1)
        k = int(np.argmin(moves))
        if n and moves[k] > step:
            message, solved = (f'pose {n}: the branch must change (the nearest solution moves a '
                               f'joint {moves[k]:.3g}, more than max_joint_step {step:g})'), n
            break
        if n:
            largest = max(largest, float(moves[k]))
        path[n], chosen[n] = shifted[usable][k], np.flatnonzero(usable)[k]
        prev = path[n]
    method = f'analytic {family.name}'
    if solved < N:
        path[solved:] = path[solved - 1] if solved else x_seed
    q = np.repeat(q_seed[None], N, axis=0)
    q[:, chain.moved] = path
    rows = np.arange(solved)
    pe, oe = np.full(N, np.nan), np.full(N, np.nan)
    pe[:solved], oe[:solved] = p_err[rows, chosen[:solved]], o_err[rows, chosen[:solved]]
    message = message or f'{method}: {N} poses, largest joint step {largest:.3g}'
    return PathResult(q, solved == N, solved, pe, oe, largest, method, message)


def _pose_by_pose(solver, tip, T, q_seed, p_tol, o_tol, step, active_joints, deadline):
    N = len(T)
    q = np.repeat(q_seed[None], N, axis=0)
    pe, oe = np.full(N, np.nan), np.full(N, np.nan)
    prev, largest, message, solved, methods = q_seed, 0.0, '', N, set()
    for n in range(N):
        left = deadline - time.monotonic()
        if left <= 0:
            message, solved = f'pose {n}: the time budget ran out', n
            break
        r = solver.solve(tip, T[n], prev, position_tolerance=p_tol, orientation_tolerance=o_tol,
                         timeout=min(left, 0.05), active_joints=active_joints, max_solutions=1)
        methods.add(r.method)
        if not r.success:
            message, solved = f'pose {n}: {r.message}', n
            break
        move = float(np.abs(r.q - prev).max())
        if n and move > step:
            message, solved = (f'pose {n}: the branch must change (the solution moves a joint '
                               f'{move:.3g}, more than max_joint_step {step:g})'), n
            break
        if n:
            largest = max(largest, move)
        q[n], pe[n], oe[n], prev = r.q, r.position_error, r.orientation_error, r.q
    if solved < N:
        q[solved:] = q[solved - 1] if solved else q_seed
    method = f'pose by pose ({", ".join(sorted(methods))})'
    message = message or f'{method}: {N} poses, largest joint step {largest:.3g}'
    return PathResult(q, solved == N, solved, pe, oe, largest, method, message)
