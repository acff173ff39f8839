"""The ``compute_fk`` and ``solve_ik`` services of the dynamics node.

:class:`KinematicsServiceNode` is a companion of
:class:`~ros_dynamics.ros.dynamics_node.DynamicsNode`, spun by its own executor thread, that
offers the services under the dynamics node's private names (``<node>/solve_ik``,
``<node>/compute_fk``) and reads the dynamics node's current model and joint state. The
request handlers below turn a request into a response; every fault becomes an error code and a
message, never an exception.
"""
from dataclasses import dataclass
import math
import time

from geometry_msgs.msg import PoseStamped
import numpy as np
from rclpy.node import Node

from ..engine import DynamicsError, IKSolver, UnknownFrameError
from ..engine.spatial import inverse_transform
from .conversions import matrix_from_pose, pose_from_matrix


@dataclass(frozen=True)
class IKDefaults:
    """Defaults of the IK service: tip frame, tolerances [m], [rad], timeout [s]."""

    tip_frame: str
    position_tolerance: float = 1e-5
    orientation_tolerance: float = 1e-5
    timeout: float = 0.05


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
    T_ref_world = inverse_transform(state.frame_pose(ref))
    poses = state.frame_poses()
    response.poses = []
    for f in frames:
        pose = PoseStamped()
        pose.header.stamp = stamp
        pose.header.frame_id = model.frame_names[ref]
        pose_from_matrix(T_ref_world @ poses[f], pose.pose)
        response.poses.append(pose)
    response.success, response.error_code = True, codes.SUCCESS
    response.message = f'{len(frames)} pose(s) in {model.frame_names[ref]!r}'
    return response


@dataclass
class IKProblem:
    """A validated IK request, ready for the engine."""

    tip: str
    T_target: np.ndarray
    q_seed: np.ndarray
    position_tolerance: float
    orientation_tolerance: float
    position_only: bool
    timeout: float
    notes: list


class KinematicsServiceNode(Node):
    """Serves ``<dynamics node>/compute_fk`` and ``<dynamics node>/solve_ik``."""

    def __init__(self, dynamics_node):
        # Global remaps (a launch file's __node:=...) must not rename this node too.
        super().__init__(dynamics_node.get_name() + '_kinematics',
                         namespace=dynamics_node.get_namespace(), use_global_arguments=False)
        self._dynamics = dynamics_node
        try:
            from ros_dynamics_interfaces.srv import ComputeFK, SolveIK
        except ImportError:
            dynamics_node.get_logger().warning(
                'ros_dynamics_interfaces is not built: the solve_ik and compute_fk services are '
                'off; everything else works')
            self.available = False
            return
        self.available = True
        self._solve_ik_type = SolveIK
        prefix = dynamics_node.get_fully_qualified_name()
        self.create_service(ComputeFK, prefix + '/compute_fk', self._on_compute_fk)
        self.create_service(SolveIK, prefix + '/solve_ik', self._on_solve_ik)
        self._requested = set()          # tip frames asked for, tables built between requests
        self._solver = None              # the IKSolver of the dynamics node's current model
        self.create_timer(0.25, self._prepare_seed_tables)

    def _on_compute_fk(self, request, response):
        return compute_fk(self._dynamics.model, self._dynamics.latest_q(), request, response,
                          self.get_clock().now().to_msg())

    def _default_tip(self):
        node = self._dynamics
        return node.get_parameter('ik.tip_frame').value or (node.tips[0] if node.tips else '')

    def _prepare_seed_tables(self):
        """Build the IK seed table (:meth:`IKSolver.prepare`) of the default tip frame,
        then of each tip frame requested since, one per tick: on this node's executor, so
        between requests and never inside one's time budget. A new model starts over.
        """
        solver = self._current_solver()
        samples = self._dynamics.get_parameter('ik.seed_samples').value
        if solver is None or samples <= 0:
            return
        for frame in [self._default_tip()] + sorted(self._requested):
            if frame in solver.model.frame_names and solver.seed_table(frame) is None:
                start = time.monotonic()
                solver.prepare(frame, samples)
                self.get_logger().info(
                    f'IK seed table of {frame}: {samples} configurations in '
                    f'{(time.monotonic() - start) * 1e3:.0f} ms')
                return

    def _current_solver(self):
        """The IK solver of the current model: a new model gets a new solver (and the old
        one's chains and seed tables go with it).
        """
        model = self._dynamics.model
        if model is None:
            return None
        if self._solver is None or self._solver.model is not model:
            self._solver = IKSolver(model)
            self._requested = set()
        return self._solver

    def _on_solve_ik(self, request, response):
        node = self._dynamics
        solver = self._current_solver()
        model = solver.model if solver is not None else None
        param = node.get_parameter
        defaults = IKDefaults(
            tip_frame=self._default_tip(),
            position_tolerance=param('ik.position_tolerance').value,
            orientation_tolerance=param('ik.orientation_tolerance').value,
            timeout=param('ik.timeout').value)
        try:
            problem = prepare_ik(model, node.latest_q(), request, defaults, type(response))
            self._requested.add(problem.tip)
            result = solver.solve(
                problem.tip, problem.T_target, problem.q_seed,
                position_tolerance=problem.position_tolerance,
                orientation_tolerance=problem.orientation_tolerance,
                position_only=problem.position_only, timeout=problem.timeout)
        except RequestError as err:
            response.error_code, response.message = err.code, str(err)
            return response
        except DynamicsError as err:
            response.error_code, response.message = type(response).INVALID_REQUEST, str(err)
            return response
        return fill_ik_response(model, problem, result, response,
                                self.get_clock().now().to_msg())


def prepare_ik(model, q_latest, request, defaults, codes):
    """Validate a SolveIK request into an :class:`IKProblem`; raises :class:`RequestError`."""
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
    T_target = model.frame_pose(q_frame, target_frame) @ matrix_from_pose(request.target.pose)
    return IKProblem(tip, T_target, q_seed, tolerances[0], tolerances[1],
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
