"""Checks of inverse-kinematics requests, before any arithmetic: typed errors naming the
argument at fault, every number bounded (:mod:`~ros_dynamics.engine.ik`,
:mod:`~ros_dynamics.engine.ik_path`).
"""
import math

import numpy as np

from . import configuration, kinematics
from .exceptions import InvalidInputError, ShapeError

#: Largest tolerance accepted [m or rad]: beyond it every configuration would be a solution.
MAX_TOLERANCE = 10.0
#: Most distinct solutions one solve collects.
MAX_SOLUTIONS = 1000


def check_request(model, tip_frame, T_target, q_seed, position_tolerance,
                  orientation_tolerance, weights, max_solutions):
    """The arguments of :meth:`IKSolver.solve`, checked: ``T_target`` (4, 4), a copy of
    ``q_seed`` (nq,) (default: the middle of the limits) and of ``weights`` (6,) or None.
    """
    model.frame_index(tip_frame)
    T_target = kinematics.as_finite_array(T_target, 'T_target')
    if T_target.shape != (4, 4):
        raise ShapeError(f'T_target: expected a 4x4 transform, got shape {T_target.shape}')
    if not _is_rotation(T_target[:3, :3].tolist()):
        raise InvalidInputError('T_target: the rotation part is not a rotation matrix')
    if T_target[3].tolist() != [0.0, 0.0, 0.0, 1.0]:
        raise InvalidInputError(f'T_target: expected a last row 0 0 0 1, got '
                                f'{T_target[3].tolist()}')
    if q_seed is None:
        q_seed = configuration.middle_configuration(model)
    q_seed = kinematics.as_configuration(model, q_seed, 'q_seed')
    if q_seed.ndim != 1:
        raise ShapeError(f'q_seed: expected shape ({model.nq},), got {q_seed.shape}')
    check_tolerance('position_tolerance', position_tolerance)
    check_tolerance('orientation_tolerance', orientation_tolerance)
    if max_solutions is not None and not (isinstance(max_solutions, (int, np.integer))
                                          and 1 <= max_solutions <= MAX_SOLUTIONS):
        raise InvalidInputError(f'max_solutions: expected a whole number in 1..{MAX_SOLUTIONS}, '
                                f'got {max_solutions!r}')
    if weights is None:
        return T_target, q_seed.copy(), None
    w = kinematics.as_finite_array(weights, 'weights')
    if w.shape != (6,) or np.any(w < 0) or not np.any(w > 0) or np.any(w > 1e6):
        raise InvalidInputError('weights: expected 6 values in [0, 1e6] (x, y, z, rx, ry, rz), '
                                f'not all zero, got {w.tolist()}')
    return T_target, q_seed.copy(), w.copy()


def _is_rotation(R):
    """Whether the rows of ``R`` (3x3 nested lists of floats) are orthonormal within 1e-6 and
    right-handed; in floats, a few times faster than NumPy for one matrix.
    """
    r1, r2, r3 = R
    det = r1[0] * (r2[1] * r3[2] - r2[2] * r3[1]) - r1[1] * (r2[0] * r3[2] - r2[2] * r3[0]) \
        + r1[2] * (r2[0] * r3[1] - r2[1] * r3[0])
    return det > 0 and all(
        abs(u[0] * v[0] + u[1] * v[1] + u[2] * v[2] - same) <= 1e-6
        for u, v, same in ((r1, r1, 1.0), (r2, r2, 1.0), (r3, r3, 1.0), (r1, r2, 0.0),
                           (r1, r3, 0.0), (r2, r3, 0.0)))


def check_tolerance(name, tol):
    """``tol`` [m or rad] in (0, :data:`MAX_TOLERANCE`] (a number, not an array)."""
    if not isinstance(tol, (float, int, np.floating, np.integer)):   # scalars: no array
        tol = kinematics.as_finite_array(tol, name)
        if tol.shape != ():
            raise InvalidInputError(f'{name}: expected a value in (0, {MAX_TOLERANCE:g}], got '
                                    f'{tol.tolist()}')
    if not 0 < tol <= MAX_TOLERANCE:        # NaN fails too
        raise InvalidInputError(f'{name}: expected a value in (0, {MAX_TOLERANCE:g}], got '
                                f'{tol!r:.40}')


#: Longest time budget [s] of one solve.
MAX_TIMEOUT = 60.0


def seconds(timeout):
    """``timeout`` [s] as a float in (0, :data:`MAX_TIMEOUT`]."""
    try:
        t = float(timeout)
    except (TypeError, ValueError, OverflowError):
        raise InvalidInputError(f'timeout: expected seconds, got {timeout!r}') from None
    if not (math.isfinite(t) and 0 < t <= MAX_TIMEOUT):
        raise InvalidInputError(f'timeout: expected a number of seconds in (0, {MAX_TIMEOUT:g}],'
                                f' got {timeout!r}')
    return t


def active_mask(model, chain, active_joints):
    """Per joint of ``chain.moved``: True where the solver may move it; None when it may move
    every one (names listing them all answer as no names do, on the same paths).
    """
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
    return None if mask.all() else mask


#: Most poses of one path.
MAX_PATH_POSES = 100_000
#: Default bound [rad or m] on any joint's move between consecutive poses.
DEFAULT_MAX_JOINT_STEP = 0.5


def check_targets(T_targets):
    """``T_targets`` as a finite (N, 4, 4) array of rigid transforms, 1 <= N <=
    :data:`MAX_PATH_POSES`; typed errors naming the first bad pose.
    """
    try:
        count = len(T_targets)
    except TypeError:
        count = 0
    if count > MAX_PATH_POSES:                   # before converting a huge sequence
        raise InvalidInputError(f'T_targets: at most {MAX_PATH_POSES} poses, got {count}')
    T = kinematics.as_finite_array(T_targets, 'T_targets')
    if T.ndim != 3 or T.shape[1:] != (4, 4) or not 1 <= len(T) <= MAX_PATH_POSES:
        raise ShapeError(f'T_targets: expected (N, 4, 4) transforms with 1 <= N <= '
                         f'{MAX_PATH_POSES}, got shape {T.shape}')
    R = T[:, :3, :3]
    bad = (np.abs(R @ np.swapaxes(R, 1, 2) - np.eye(3)).max(axis=(1, 2)) > 1e-6) \
        | (np.linalg.det(R) < 0) | np.any(T[:, 3] != [0.0, 0.0, 0.0, 1.0], axis=1)
    if bad.any():
        raise InvalidInputError(f'T_targets[{int(np.argmax(bad))}]: not a rigid transform (a '
                                'rotation matrix and a last row 0 0 0 1)')
    return T


def check_step(max_joint_step):
    """``max_joint_step`` [rad or m] as a float in (0, 2 pi]."""
    try:
        step = float(max_joint_step)
    except (TypeError, ValueError, OverflowError):
        raise InvalidInputError(f'max_joint_step: expected a number, got {max_joint_step!r:.40}')\
            from None
    if not (math.isfinite(step) and 0 < step <= 2 * math.pi):
        raise InvalidInputError(f'max_joint_step: expected a value in (0, 2 pi], got {step!r}')
    return step
