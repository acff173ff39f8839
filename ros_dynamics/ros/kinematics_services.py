"""The ``compute_fk``, ``solve_ik`` and ``solve_ik_path`` services of the dynamics node, on a
node of their own.

:class:`KinematicsServiceNode` is a companion of
:class:`~ros_dynamics.ros.dynamics_node.DynamicsNode` offering the services under the names the
dynamics node resolves for ``~/solve_ik``, ``~/solve_ik_path`` and ``~/compute_fk`` (so remap
rules given to the dynamics node apply), stamping with the dynamics node's clock. Its executor
has several threads and FK and IK separate callback groups: a long IK solve never holds up
``compute_fk``, and IK solves and paths (and the seed tables built between them) run one at a
time. The
request queues are deep (:data:`SERVICE_QOS`), so bursts of requests from many clients are all
answered. The dynamics node hands it each model it serves with the validated settings
(:meth:`KinematicsServiceNode.serve`); requests are turned into responses by
:mod:`~ros_dynamics.ros.kinematics_requests`.
"""
from dataclasses import dataclass
import time

from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy

from ..engine import DynamicsError, IKSolver
from .guard import guarded
from .kinematics_requests import (
    RequestError,
    compute_fk,
    fill_ik_path_response,
    fill_ik_response,
    ik_path_problem,
    ik_problem,
)
from .settings import IKSettings
from .throttled_log import ThrottledLog

#: QoS of the two services: requests queued up to this depth are all answered.
SERVICE_QOS = QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE,
                         durability=DurabilityPolicy.VOLATILE, history=HistoryPolicy.KEEP_LAST)
#: Most tip frames per model that get a seed table (each one is a few MB).
MAX_SEED_TABLES = 8


@dataclass(frozen=True)
class Served:
    """What the services answer with: a model, its IK solver, the IK settings and the frame
    prefix.
    """

    model: object
    solver: IKSolver
    ik: IKSettings
    frame_prefix: str = ''


class KinematicsServiceNode(Node):
    """Serves ``compute_fk`` and ``solve_ik`` of a dynamics node (see the module docstring)."""

    #: Threads of this node's executor (process.run_nodes reads it).
    executor_threads = 3

    def __init__(self, dynamics_node, diagnostics):
        # Global remaps (a launch file's __node:=...) must not rename this node too; the
        # services' names are resolved by the dynamics node, with its remap rules.
        # Its stamps are the dynamics node's clock (simulated time with its use_sim_time): no
        # /clock subscription of its own, which woke this multi-threaded executor 1,000 times
        # a second beside a simulation and took the interpreter from the joint states.
        super().__init__(dynamics_node.get_name() + '_kinematics',
                         namespace=dynamics_node.get_namespace(), use_global_arguments=False,
                         parameter_overrides=[Parameter('use_sim_time', value=False)])
        self._dynamics_clock = dynamics_node.get_clock()
        self._latest_q = dynamics_node.latest_q
        self._diagnostics = diagnostics
        self._log = ThrottledLog(self.get_logger())
        self._served = None              # swapped whole by serve()
        self._requested = []             # tip frames asked for, tables built between requests
        try:
            from ros_dynamics_interfaces.srv import ComputeFK, SolveIK, SolveIKPath
        except ImportError:
            dynamics_node.get_logger().warning(
                'ros_dynamics_interfaces is not built: the solve_ik, solve_ik_path and '
                'compute_fk services are off; everything else works')
            self.available = False
            return
        self.available = True
        ik_group, fk_group = MutuallyExclusiveCallbackGroup(), MutuallyExclusiveCallbackGroup()
        self.create_service(
            ComputeFK, dynamics_node.resolve_service_name('~/compute_fk'),
            self._guard(self._on_compute_fk, 'compute_fk', failure_response),
            qos_profile=SERVICE_QOS, callback_group=fk_group)
        self.create_service(
            SolveIK, dynamics_node.resolve_service_name('~/solve_ik'),
            self._guard(self._on_solve_ik, 'solve_ik', failure_response),
            qos_profile=SERVICE_QOS, callback_group=ik_group)
        self.create_service(
            SolveIKPath, dynamics_node.resolve_service_name('~/solve_ik_path'),
            self._guard(self._on_solve_ik_path, 'solve_ik_path', failure_response),
            qos_profile=SERVICE_QOS, callback_group=ik_group)
        self.create_timer(0.25, self._guard(self._prepare_seed_tables, 'seed tables'),
                          callback_group=ik_group)

    def get_clock(self):
        """The dynamics node's clock: what the responses are stamped with."""
        return self._dynamics_clock

    def _guard(self, callback, what, fallback=None):
        return guarded(callback, what, self._log, self._diagnostics, fallback)

    def serve(self, model, ik, frame_prefix=''):
        """Answer with ``model``, :class:`IKSettings` ``ik`` and ``frame_prefix`` from now on:
        one assignment, safe from another thread. A new model gets a new solver (its seed
        tables start over; a table being built for the old one is thrown away).
        """
        served = self._served
        same = served is not None and served.model is model
        if not same:
            self._requested = []
        self._served = Served(model, served.solver if same else IKSolver(model), ik,
                              frame_prefix)

    def _on_compute_fk(self, request, response):
        served = self._served
        response = compute_fk(served.model if served else None, self._latest_q(), request,
                              response, self.get_clock().now().to_msg(),
                              served.frame_prefix if served else '')
        if not response.success:
            self._diagnostics.count('requests_refused')
        return response

    def _prepare_seed_tables(self):
        """Build the IK seed table of the default tip frame, then of each tip frame requested
        since (at most :data:`MAX_SEED_TABLES`), one per tick: in the IK callback group, so
        between requests and never inside one's time budget.
        """
        served = self._served
        if served is None or served.ik.seed_samples <= 0:
            return
        samples = served.ik.seed_samples
        frames = [served.ik.tip_frame] + [f for f in self._requested if f != served.ik.tip_frame]
        for frame in frames[:MAX_SEED_TABLES]:
            if frame in served.model.frame_names and served.solver.seed_table(frame) is None:
                start = time.monotonic()
                served.solver.prepare(frame, samples)
                if self._served is None or self._served.solver is not served.solver:
                    return                       # the model was replaced meanwhile
                self._log.info(f'IK seed table of {frame}: {samples} configurations in '
                               f'{(time.monotonic() - start) * 1e3:.0f} ms')
                return

    def _on_solve_ik(self, request, response):
        return self._answer(request, response, ik_problem, _solve_pose, fill_ik_response)

    def _on_solve_ik_path(self, request, response):
        try:
            return self._answer(request, response, ik_path_problem, _solve_path,
                                fill_ik_path_response)
        finally:
            waypoints, request.waypoints = request.waypoints, []
            release_in_slices(waypoints)

    def _answer(self, request, response, validate, solve, fill):
        """The response to an IK request: ``validate`` it into a problem, ``solve`` that with
        the served solver, ``fill`` the response; or the error code of a refused request.
        """
        served = self._served
        codes = type(response)
        try:
            if served is None:
                raise RequestError(codes.NO_MODEL, 'no robot model loaded yet')
            problem = validate(served.model, self._latest_q(), request, served.ik, codes,
                               served.frame_prefix)
            if problem.tip not in self._requested and len(self._requested) < MAX_SEED_TABLES:
                self._requested.append(problem.tip)
            result = solve(served.solver, problem)
        except RequestError as err:
            self._diagnostics.count('requests_refused')
            response.error_code, response.message = err.code, str(err)
            return response
        except DynamicsError as err:
            self._diagnostics.count('requests_refused')
            response.error_code = codes.INVALID_GROUP_NAME if 'active_joints' in str(err) \
                else codes.INVALID_REQUEST
            response.message = str(err)[:1000]
            return response
        return fill(served.model, problem, result, response, self.get_clock().now().to_msg())


def _solve_pose(solver, problem):
    return solver.solve(problem.tip, problem.T_world_target, problem.q_seed,
                        position_only=problem.position_only, **problem.options())


def _solve_path(solver, problem):
    return solver.solve_path(problem.tip, problem.T_world_target, problem.q_seed,
                             max_joint_step=problem.max_joint_step, **problem.options())


def release_in_slices(items, size=10_000):
    """Empty the list ``items`` a slice at a time: freeing 10^5 poses at once holds the
    interpreter for 0.1-0.2 s, and between slices the joint-state thread can take it.
    """
    while items:
        del items[-size:]


def failure_response(request, response, error):
    """The answer of a service whose callback raised: FAILURE and the cause."""
    response.success = False
    response.error_code = type(response).FAILURE
    response.message = f'internal error: {type(error).__name__}: {str(error)[:500]}'
    return response
