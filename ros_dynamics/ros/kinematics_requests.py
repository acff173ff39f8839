"""Requests of the ``compute_fk``, ``solve_ik`` and ``solve_ik_path`` services turned into
responses.

No node here: :func:`compute_fk` fills a ComputeFK response, :func:`ik_problem` validates a
SolveIK request into an :class:`IKProblem` for the engine, :func:`fill_ik_response` turns the
engine's result into the response; :func:`ik_path_problem` and :func:`fill_ik_path_response`
do the same for SolveIKPath. Every fault becomes an error code and a message
(:class:`RequestError`), never an exception out of a service callback.

Every number is checked before any arithmetic: positions of states and seeds (finite, at most
the engine's :data:`~ros_dynamics.engine.kinematics.MAX_JOINT_VALUE`), target coordinates and
quaternion components (the same bound, so that normalising cannot overflow), tolerances
(finite, >= 0, at most the maxima of the settings) and timeouts (at most ``ik.max_timeout``).
Frame ids received may carry the node's ``frame_prefix`` (stripped); frame ids sent carry it.

Floating and planar bases: states and seeds name actuated joints (base coordinates by
``model.q_names`` are accepted too); the rest comes from the node's latest state, the base
pose from odometry included, so FK answers in the world with the base where it is. IK moves
actuated joints only (the base keeps the seed's pose) and answers with the actuated joints.
"""
from dataclasses import dataclass
import math

from geometry_msgs.msg import PoseStamped
import numpy as np
from trajectory_msgs.msg import JointTrajectoryPoint

from ..engine import DynamicsError, UnknownFrameError
from ..engine.ik_requests import DEFAULT_MAX_JOINT_STEP, MAX_PATH_POSES
from ..engine.kinematics import MAX_JOINT_VALUE
from ..engine.rotations import matrix_from_quat_xyzw
from ..engine.spatial import inverse_transform
from .conversions import matrix_from_pose, pose_from_matrix
from .frame_names import FramePrefix
from .throttled_log import clip

#: Most frames one compute_fk request may name, unless the model has more.
MAX_FK_FRAMES = 10_000


class RequestError(Exception):
    """A request that cannot be served: carries the response error code."""

    def __init__(self, code, message):
        super().__init__(clip(message))
        self.code = code


def _frame(model, name, code, prefix):
    try:
        return model.frame_index(prefix.to_frame(name) or model.root_link)
    except UnknownFrameError as err:
        raise RequestError(code, str(err)) from None


def _state_from_msg(model, msg, base_q, code):
    """Q (nq,) from a JointState-like message merged onto ``base_q``."""
    names, positions = list(msg.name), list(msg.position)
    if len(names) != len(positions):
        raise RequestError(code, f'joint state: {len(names)} names but {len(positions)} '
                                 'positions')
    if not all(abs(p) <= MAX_JOINT_VALUE for p in positions):
        raise RequestError(code, f'joint state: positions must be finite and at most '
                                 f'{MAX_JOINT_VALUE:g}')
    if len(set(names)) != len(names):
        raise RequestError(code, 'joint state: a joint is named twice')
    try:
        return model.q_from_names(names, positions, default=base_q)
    except DynamicsError as err:
        raise RequestError(code, f'joint state: {err}') from None


def compute_fk(model, q_latest, request, response, stamp, frame_prefix=''):
    """Fill a ComputeFK response: poses of the requested frames in the reference frame, and
    their frame ids (``fk_link_names``).
    """
    codes = type(response)
    prefix = FramePrefix(frame_prefix)
    if model is None:
        response.error_code, response.message = codes.NO_MODEL, 'no robot model loaded yet'
        return response
    try:
        base = q_latest if q_latest is not None else model.neutral()
        q = _state_from_msg(model, request.state, base, codes.INVALID_ROBOT_STATE)
        ref = _frame(model, request.reference_frame, codes.INVALID_LINK_NAME, prefix)
        most = max(MAX_FK_FRAMES, len(model.frame_names))
        if len(request.frames) > most:
            raise RequestError(codes.INVALID_REQUEST, f'{len(request.frames)} frames, more '
                                                      f'than {most}')
        frames = [_frame(model, f, codes.INVALID_LINK_NAME, prefix) for f in request.frames] \
            or list(range(len(model.frame_names)))
        state = model.kinematics(q)
        T_ref_world = inverse_transform(state.frame_pose(ref))
        T_ref_frames = T_ref_world @ state.frame_poses()[frames]
    except RequestError as err:
        response.error_code, response.message = err.code, str(err)
        return response
    except DynamicsError as err:
        response.error_code, response.message = codes.INVALID_ROBOT_STATE, clip(str(err))
        return response
    if not np.all(np.isfinite(T_ref_frames)):
        response.error_code = codes.INVALID_ROBOT_STATE
        response.message = 'the poses of this state are not finite'
        return response
    ref_id = prefix.to_frame_id(model.frame_names[ref])
    response.poses, response.fk_link_names = [], []
    for f, T in zip(frames, T_ref_frames):
        pose = PoseStamped()
        pose.header.stamp = stamp
        pose.header.frame_id = ref_id
        pose_from_matrix(T, pose.pose)
        response.poses.append(pose)
        response.fk_link_names.append(prefix.to_frame_id(model.frame_names[f]))
    response.success, response.error_code = True, codes.SUCCESS
    response.message = f'{len(frames)} pose(s) in {ref_id!r}'
    return response


@dataclass
class IKProblem:
    """A validated IK request (one target, or a path's), ready for the engine."""

    tip: str
    T_world_target: np.ndarray     # (4, 4) pose of the target in the world frame; (N, 4, 4)
    q_seed: np.ndarray
    position_tolerance: float
    orientation_tolerance: float
    timeout: float
    active_joints: tuple          # None: every joint that moves the tip
    notes: list
    position_only: bool = False
    max_joint_step: float = DEFAULT_MAX_JOINT_STEP     # paths only

    def options(self):
        """The keyword options of the engine's solve and solve_path both take."""
        return {'position_tolerance': self.position_tolerance,
                'orientation_tolerance': self.orientation_tolerance, 'timeout': self.timeout,
                'active_joints': self.active_joints}


def ik_problem(model, q_latest, request, defaults, codes, frame_prefix=''):
    """Validate a SolveIK request into an :class:`IKProblem`; ``defaults`` (an
    :class:`~ros_dynamics.ros.settings.IKSettings`) fill its zero fields and bound the others.
    Raises :class:`RequestError`.
    """
    tip, target_frame = _tip_and_frame(model, request.tip_frame, request.target.header.frame_id,
                                       defaults, codes, frame_prefix)
    notes = []
    p, o = request.target.pose.position, request.target.pose.orientation
    if not all(abs(v) <= MAX_JOINT_VALUE for v in (p.x, p.y, p.z, o.x, o.y, o.z, o.w)):
        raise RequestError(codes.INVALID_REQUEST, f'target pose: NaN, Inf or values beyond '
                                                  f'{MAX_JOINT_VALUE:g}')
    norm = math.sqrt(o.x * o.x + o.y * o.y + o.z * o.z + o.w * o.w)    # <= 2e100: no overflow
    if norm < 1e-9:
        raise RequestError(codes.INVALID_REQUEST, 'target pose: zero quaternion')
    if abs(norm - 1.0) > 1e-6:
        notes.append(f'target quaternion of norm {norm:.6g} normalised')
    timeout = _timeout(request.timeout, defaults, codes)
    tolerances = _tolerances(request, defaults, codes)
    active = _active_joints(model, request, defaults, codes)
    q_seed, T_world_frame = _seed_and_frame(model, q_latest, request.seed, target_frame, codes)
    T_world_target = T_world_frame @ matrix_from_pose(request.target.pose)
    if not np.all(np.abs(T_world_target) <= MAX_JOINT_VALUE):
        raise RequestError(codes.INVALID_REQUEST, 'target pose: not finite in the world frame')
    return IKProblem(tip, T_world_target, q_seed, tolerances[0], tolerances[1], timeout, active,
                     notes, position_only=bool(request.position_only))


def _tip_and_frame(model, tip_frame, frame_id, defaults, codes, frame_prefix):
    """The tip frame's name (empty: ``defaults.tip_frame``) and the index of the targets'
    frame (empty: the root), both checked.
    """
    if model is None:
        raise RequestError(codes.NO_MODEL, 'no robot model loaded yet')
    prefix = FramePrefix(frame_prefix)
    tip = prefix.to_frame(tip_frame) or defaults.tip_frame
    _frame(model, tip, codes.INVALID_LINK_NAME, prefix)
    return tip, _frame(model, frame_id, codes.FRAME_TRANSFORM_FAILURE, prefix)


def _seed_and_frame(model, q_latest, seed, frame, codes):
    """The seed (nq,) from a JointState merged onto the latest state (else the middle of the
    limits), clipped into the limits, and ``T_world_frame`` (4, 4) of the targets' frame.
    """
    base = q_latest if q_latest is not None else model.middle_configuration()
    q_seed = _state_from_msg(model, seed, base, codes.INVALID_ROBOT_STATE)
    q_seed = np.clip(q_seed, model.lower_limits, model.upper_limits)
    # A target given in a moving frame is placed with the robot's current state; without one,
    # only frames fixed to the base can be used.
    if model.frame_body[frame] != 0 and q_latest is None:
        raise RequestError(codes.FRAME_TRANSFORM_FAILURE,
                           f'target frame {model.frame_names[frame]!r} moves with the '
                           'joints and no joint state has been received yet')
    return q_seed, model.frame_pose(q_latest if q_latest is not None else q_seed, frame)


def _timeout(duration, defaults, codes, default=None):
    timeout = duration.sec + duration.nanosec * 1e-9
    if timeout < 0:
        raise RequestError(codes.INVALID_REQUEST, f'timeout: must be >= 0 s, got {timeout}')
    if timeout > defaults.max_timeout:
        raise RequestError(codes.INVALID_REQUEST, f'timeout: at most ik.max_timeout = '
                                                  f'{defaults.max_timeout:g} s, got {timeout:g} s')
    return timeout or default or defaults.timeout


def _tolerances(request, defaults, codes):
    """The request's position and orientation tolerances, zeros replaced by the defaults."""
    return [_tolerance(name, value, default, highest, codes)
            for name, value, default, highest in (
                ('position_tolerance', request.position_tolerance,
                 defaults.position_tolerance, defaults.max_position_tolerance),
                ('orientation_tolerance', request.orientation_tolerance,
                 defaults.orientation_tolerance, defaults.max_orientation_tolerance))]


def _tolerance(name, value, default, highest, codes):
    if not 0 <= value <= highest:                     # False for NaN too
        raise RequestError(codes.INVALID_REQUEST, f'{name}: expected a value in [0, '
                                                  f'{highest:g}] (0: the default), got {value}')
    return value or default


def _active_joints(model, request, defaults, codes):
    names = list(request.active_joints)
    if not names:
        return defaults.active_joints
    valid = model.actuated_joint_names          # the engine's IK moves one-DOF joints only
    unknown = [n for n in names if n not in valid]
    if unknown or len(set(names)) != len(names):
        raise RequestError(codes.INVALID_GROUP_NAME,
                           f'active_joints: unknown {unknown[:20]} or repeated joints; valid: '
                           f'{list(valid)[:50]}')
    return tuple(names)


def fill_ik_response(model, problem, result, response, stamp):
    """SolveIK response from an engine :class:`~ros_dynamics.engine.ik.IKResult`: SUCCESS, else
    NO_IK_SOLUTION (as MoveIt answers when the budget ends without a solution) with the best
    configuration found and its errors.
    """
    _fill_outcome(problem, result, response, stamp)
    response.solution.name = list(model.actuated_joint_names)
    response.solution.position = [float(x) for x in result.q[model.actuated_q_index]]
    response.position_error = float(result.position_error)
    response.orientation_error = float(result.orientation_error)
    response.iterations = int(min(result.iterations, 2 ** 32 - 1))
    return response


def ik_path_problem(model, q_latest, request, defaults, codes, frame_prefix=''):
    """Validate a SolveIKPath request into an :class:`IKProblem` of the waypoints (see
    :func:`ik_problem`); they are checked together, the first bad one named. Raises
    :class:`RequestError`.
    """
    tip, frame = _tip_and_frame(model, request.tip_frame, request.header.frame_id, defaults,
                                codes, frame_prefix)
    notes = []
    count = len(request.waypoints)
    if not 1 <= count <= MAX_PATH_POSES:
        raise RequestError(codes.INVALID_REQUEST, f'waypoints: expected 1 to {MAX_PATH_POSES}, '
                                                  f'got {count}')
    values = np.array([(w.position.x, w.position.y, w.position.z, w.orientation.x,
                        w.orientation.y, w.orientation.z, w.orientation.w)
                       for w in request.waypoints], dtype=float)
    bad = ~np.all(np.abs(values) <= MAX_JOINT_VALUE, axis=1)         # NaN too
    if bad.any():
        raise RequestError(codes.INVALID_REQUEST, f'waypoint {int(np.argmax(bad))}: NaN, Inf '
                                                  f'or values beyond {MAX_JOINT_VALUE:g}')
    norms = np.sqrt(np.einsum('ij,ij->i', values[:, 3:], values[:, 3:]))   # <= 2e100
    if np.any(norms < 1e-9):
        raise RequestError(codes.INVALID_REQUEST, f'waypoint {int(np.argmax(norms < 1e-9))}: '
                                                  'zero quaternion')
    if np.any(np.abs(norms - 1.0) > 1e-6):
        notes.append(f'{int(np.count_nonzero(np.abs(norms - 1.0) > 1e-6))} waypoint '
                     'quaternion(s) normalised')
    T = np.zeros((count, 4, 4))
    T[:, :3, :3] = matrix_from_quat_xyzw(values[:, 3:] / norms[:, None])
    T[:, :3, 3], T[:, 3, 3] = values[:, :3], 1.0
    timeout = _timeout(request.timeout, defaults, codes,
                       min(defaults.timeout * count, defaults.max_timeout))
    tolerances = _tolerances(request, defaults, codes)
    step = request.max_joint_step
    if not 0 <= step <= 2 * math.pi:                                   # False for NaN too
        raise RequestError(codes.INVALID_REQUEST, 'max_joint_step: expected a value in '
                                                  f'[0, 2 pi] (0: the default), got {step}')
    active = _active_joints(model, request, defaults, codes)
    q_seed, T_world_frame = _seed_and_frame(model, q_latest, request.start_state, frame, codes)
    T_world_targets = T_world_frame @ T
    if not np.all(np.abs(T_world_targets) <= MAX_JOINT_VALUE):
        raise RequestError(codes.INVALID_REQUEST, 'waypoints: not finite in the world frame')
    return IKProblem(tip, T_world_targets, q_seed, tolerances[0], tolerances[1], timeout, active,
                     notes, max_joint_step=step or DEFAULT_MAX_JOINT_STEP)


def _fill_outcome(problem, result, response, stamp):
    """success, error_code (SUCCESS or NO_IK_SOLUTION), message and the solution's stamp."""
    codes = type(response)
    response.success = bool(result.success)
    response.error_code = codes.SUCCESS if result.success else codes.NO_IK_SOLUTION
    response.message = clip('; '.join([result.message] + problem.notes))
    response.solution.header.stamp = stamp


def fill_ik_path_response(model, problem, result, response, stamp):
    """SolveIKPath response from an engine :class:`~ros_dynamics.engine.ik_path.PathResult`:
    the solved waypoints' configurations as a trajectory, SUCCESS or NO_IK_SOLUTION.
    """
    _fill_outcome(problem, result, response, stamp)
    response.solution.joint_names = list(model.actuated_joint_names)
    rows = result.q[:result.solved][:, model.actuated_q_index].tolist()
    response.solution.points = [JointTrajectoryPoint(positions=row) for row in rows]
    response.fraction = result.solved / len(result.q)
    response.largest_joint_step = float(result.max_joint_step)
    return response
