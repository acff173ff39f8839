"""Requests of the ``compute_fk`` and ``solve_ik`` services turned into responses.

No node here: :func:`compute_fk` fills a ComputeFK response, :func:`ik_problem` validates a
SolveIK request into an :class:`IKProblem` for the engine, :func:`fill_ik_response` turns the
engine's result into the response. Every fault becomes an error code and a message
(:class:`RequestError`), never an exception out of a service callback.
"""
from dataclasses import dataclass
import math

from geometry_msgs.msg import PoseStamped
import numpy as np

from ..engine import DynamicsError, UnknownFrameError
from ..engine.spatial import inverse_transform
from .conversions import matrix_from_pose, pose_from_matrix


class RequestError(Exception):
    """A request that cannot be served: carries the response error code."""

    def __init__(self, code, message):
        super().__init__(message)
        self.code = code


def _frame(model, name, code):
    try:
        return model.frame_index(name or model.root_link)
    except UnknownFrameError as err:
        raise RequestError(code, str(err)) from None


def _state_from_msg(model, msg, base_q, code):
    """Q (nq,) from a JointState-like message merged onto ``base_q``."""
    names, positions = list(msg.name), list(msg.position)
    if len(names) != len(positions):
        raise RequestError(code, f'joint state: {len(names)} names but {len(positions)} '
                                 'positions')
    if not all(math.isfinite(p) for p in positions):
        raise RequestError(code, 'joint state: positions must be finite')
    try:
        return model.q_from_names(names, positions, default=base_q)
    except DynamicsError as err:
        raise RequestError(code, f'joint state: {err}') from None


def compute_fk(model, q_latest, request, response, stamp):
    """Fill a ComputeFK response: poses of the requested frames in the reference frame."""
    codes = type(response)
    if model is None:
        response.error_code, response.message = codes.NO_MODEL, 'no robot model loaded yet'
        return response
    try:
        base = q_latest if q_latest is not None else np.zeros(model.nq)
        q = _state_from_msg(model, request.state, base, codes.INVALID_ROBOT_STATE)
        ref = _frame(model, request.reference_frame, codes.INVALID_LINK_NAME)
        frames = [_frame(model, f, codes.INVALID_LINK_NAME) for f in request.frames] \
            or list(range(len(model.frame_names)))
    except RequestError as err:
        response.error_code, response.message = err.code, str(err)
        return response
    state = model.kinematics(q)
    T_ref_root = inverse_transform(state.frame_pose(ref))
    T_root_frames = state.frame_poses()
    response.poses = []
    for f in frames:
        pose = PoseStamped()
        pose.header.stamp = stamp
        pose.header.frame_id = model.frame_names[ref]
        pose_from_matrix(T_ref_root @ T_root_frames[f], pose.pose)
        response.poses.append(pose)
    response.success, response.error_code = True, codes.SUCCESS
    response.message = f'{len(frames)} pose(s) in {model.frame_names[ref]!r}'
    return response


@dataclass
class IKProblem:
    """A validated IK request, ready for the engine."""

    tip: str
    T_root_target: np.ndarray     # (4, 4) pose of the target in the root link
    q_seed: np.ndarray
    position_tolerance: float
    orientation_tolerance: float
    position_only: bool
    timeout: float
    notes: list


def ik_problem(model, q_latest, request, defaults, codes):
    """Validate a SolveIK request into an :class:`IKProblem`; ``defaults`` (an
    :class:`~ros_dynamics.ros.settings.IKSettings`) fill its zero fields. Raises
    :class:`RequestError`.
    """
    if model is None:
        raise RequestError(codes.NO_MODEL, 'no robot model loaded yet')
    notes = []
    tip = request.tip_frame or defaults.tip_frame
    _frame(model, tip, codes.INVALID_LINK_NAME)
    target_frame = _frame(model, request.target.header.frame_id, codes.FRAME_TRANSFORM_FAILURE)
    p, o = request.target.pose.position, request.target.pose.orientation
    values = [p.x, p.y, p.z, o.x, o.y, o.z, o.w]
    if not all(math.isfinite(v) for v in values):
        raise RequestError(codes.INVALID_REQUEST, 'target pose: NaN or infinite values')
    norm = math.sqrt(o.x ** 2 + o.y ** 2 + o.z ** 2 + o.w ** 2)
    if norm < 1e-9:
        raise RequestError(codes.INVALID_REQUEST, 'target pose: zero quaternion')
    if abs(norm - 1.0) > 1e-6:
        notes.append(f'target quaternion of norm {norm:.6g} normalised')
    timeout = request.timeout.sec + request.timeout.nanosec * 1e-9
    if timeout < 0:
        raise RequestError(codes.INVALID_REQUEST, f'timeout: must be >= 0 s, got {timeout}')
    timeout = timeout or defaults.timeout
    tolerances = []
    for name, value, default in (
            ('position_tolerance', request.position_tolerance, defaults.position_tolerance),
            ('orientation_tolerance', request.orientation_tolerance,
             defaults.orientation_tolerance)):
        if not math.isfinite(value) or value < 0:
            raise RequestError(codes.INVALID_REQUEST, f'{name}: must be >= 0, got {value}')
        tolerances.append(value or default)
    base = q_latest if q_latest is not None else model.middle_configuration()
    q_seed = _state_from_msg(model, request.seed, base, codes.INVALID_ROBOT_STATE)
    q_seed = np.clip(q_seed, model.lower_limits, model.upper_limits)
    # A target given in a moving frame is placed with the robot's current state; without one,
    # only frames fixed to the base can be used.
    if model.frame_body[target_frame] != 0 and q_latest is None:
        raise RequestError(codes.FRAME_TRANSFORM_FAILURE,
                           f'target frame {model.frame_names[target_frame]!r} moves with the '
                           'joints and no joint state has been received yet')
    q_frame = q_latest if q_latest is not None else q_seed
    T_root_target = model.frame_pose(q_frame, target_frame) @ \
        matrix_from_pose(request.target.pose)
    return IKProblem(tip, T_root_target, q_seed, tolerances[0], tolerances[1],
                     bool(request.position_only), timeout, notes)


def fill_ik_response(model, problem, result, response, stamp):
    """SolveIK response from an engine :class:`~ros_dynamics.engine.ik.IKResult`."""
    codes = type(response)
    response.success = bool(result.success)
    if result.success:
        response.error_code = codes.SUCCESS
    else:
        response.error_code = codes.TIMED_OUT if result.timed_out else codes.NO_IK_SOLUTION
    response.message = '; '.join([result.message] + problem.notes)
    response.solution.header.stamp = stamp
    response.solution.name = list(model.joint_names)
    response.solution.position = [float(x) for x in result.q]
    response.position_error = float(result.position_error)
    response.orientation_error = float(result.orientation_error)
    response.iterations = int(min(result.iterations, 2 ** 32 - 1))
    return response
