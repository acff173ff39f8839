"""The ``compute_fk`` and ``solve_ik`` services of the dynamics node, on a node of their own.

:class:`KinematicsServiceNode` is a companion of
:class:`~ros_dynamics.ros.dynamics_node.DynamicsNode`, spun by its own executor thread, that
offers the services under the dynamics node's private names (``<node>/solve_ik``,
``<node>/compute_fk``). The dynamics node hands it each model it serves together with the
validated :class:`~ros_dynamics.ros.settings.IKSettings` (:meth:`KinematicsServiceNode.serve`);
requests are turned into responses by :mod:`~ros_dynamics.ros.kinematics_requests`.
"""
from dataclasses import dataclass
import time

from rclpy.node import Node

from ..engine import DynamicsError, IKSolver
from .kinematics_requests import RequestError, compute_fk, fill_ik_response, ik_problem
from .settings import IKSettings


@dataclass(frozen=True)
class Served:
    """What the services answer with: a model, its IK solver and the IK settings."""

    model: object
    solver: IKSolver
    ik: IKSettings


class KinematicsServiceNode(Node):
    """Serves ``<dynamics node>/compute_fk`` and ``<dynamics node>/solve_ik``."""

    def __init__(self, dynamics_node):
        # Global remaps (a launch file's __node:=...) must not rename this node too.
        super().__init__(dynamics_node.get_name() + '_kinematics',
                         namespace=dynamics_node.get_namespace(), use_global_arguments=False)
        self._latest_q = dynamics_node.latest_q
        self._served = None              # swapped whole by serve()
        self._requested = set()          # tip frames asked for, tables built between requests
        try:
            from ros_dynamics_interfaces.srv import ComputeFK, SolveIK
        except ImportError:
            dynamics_node.get_logger().warning(
                'ros_dynamics_interfaces is not built: the solve_ik and compute_fk services are '
                'off; everything else works')
            self.available = False
            return
        self.available = True
        prefix = dynamics_node.get_fully_qualified_name()
        self.create_service(ComputeFK, prefix + '/compute_fk', self._on_compute_fk)
        self.create_service(SolveIK, prefix + '/solve_ik', self._on_solve_ik)
        self.create_timer(0.25, self._prepare_seed_tables)

    def serve(self, model, ik):
        """Answer with ``model`` and :class:`IKSettings` ``ik`` from now on: one assignment,
        safe from another thread. A new model gets a new solver (its seed tables start over).
        """
        served = self._served
        same = served is not None and served.model is model
        self._served = Served(model, served.solver if same else IKSolver(model), ik)

    def _on_compute_fk(self, request, response):
        served = self._served
        return compute_fk(served.model if served else None, self._latest_q(), request, response,
                          self.get_clock().now().to_msg())

    def _prepare_seed_tables(self):
        """Build the IK seed table of the default tip frame, then of each tip frame requested
        since, one per tick: on this node's executor, so between requests and never inside
        one's time budget.
        """
        served = self._served
        if served is None or served.ik.seed_samples <= 0:
            return
        samples = served.ik.seed_samples
        for frame in [served.ik.tip_frame] + sorted(self._requested):
            if frame in served.model.frame_names and served.solver.seed_table(frame) is None:
                start = time.monotonic()
                served.solver.prepare(frame, samples)
                self.get_logger().info(
                    f'IK seed table of {frame}: {samples} configurations in '
                    f'{(time.monotonic() - start) * 1e3:.0f} ms')
                return

    def _on_solve_ik(self, request, response):
        served = self._served
        codes = type(response)
        try:
            if served is None:
                raise RequestError(codes.NO_MODEL, 'no robot model loaded yet')
            problem = ik_problem(served.model, self._latest_q(), request, served.ik, codes)
            self._requested.add(problem.tip)
            result = served.solver.solve(
                problem.tip, problem.T_root_target, problem.q_seed,
                position_tolerance=problem.position_tolerance,
                orientation_tolerance=problem.orientation_tolerance,
                position_only=problem.position_only, timeout=problem.timeout)
        except RequestError as err:
            response.error_code, response.message = err.code, str(err)
            return response
        except DynamicsError as err:
            response.error_code, response.message = codes.INVALID_REQUEST, str(err)
            return response
        return fill_ik_response(served.model, problem, result, response,
                                self.get_clock().now().to_msg())
