"""The ros_dynamics node: gravity and feedforward torques, tip poses, twists and Jacobians, live.

The wiring of the node's parts. Per joint state (or at ``publish_rate``): validate, merge into
the latest state by name (:mod:`~ros_dynamics.ros.joint_state_merger`), one kinematics pass,
then every output reads from that pass (:mod:`~ros_dynamics.ros.outputs`) and is stamped with
the joint state's time. Parameters are declared and validated by
:mod:`~ros_dynamics.ros.settings`: validated in the parameter callback, applied afterwards as
one value. Models come from :mod:`~ros_dynamics.ros.model_loading`: a description arriving
later is built off to the side and swapped in with the settings validated against it; an
invalid one is refused and the old model keeps serving. Counters and the 1 Hz status are
:mod:`~ros_dynamics.ros.diagnostics`.

Services ``~/compute_fk`` and ``~/solve_ik`` run on a companion node with its own executor
thread (:class:`~ros_dynamics.ros.kinematics_services.KinematicsServiceNode`), handed each model
and its IK settings, so a slow IK request never holds up joint states; each executor is
single-threaded, the fastest rclpy offers.
"""
from dataclasses import dataclass
import re
import sys
import time

from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import PoseStamped, TwistStamped, WrenchStamped
import numpy as np
from rcl_interfaces.msg import SetParametersResult
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from rclpy.time import Time
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, String
from trajectory_msgs.msg import JointTrajectory
from visualization_msgs.msg import MarkerArray

from . import outputs, settings
from .conversions import wrench_to_vector6
from .diagnostics import Diagnostics
from .joint_state_merger import InvalidJointState, JointStateMerger
from .kinematics_services import KinematicsServiceNode
from .model_loading import TOPIC_SOURCE, DescriptionRefused, build_model, initial_description
from .process import run_nodes
from .settings import SettingsError
from .trajectory_feedforward import InvalidTrajectory, from_message

#: QoS of the robot_description topic, as robot_state_publisher publishes it.
DESCRIPTION_QOS = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                             durability=DurabilityPolicy.TRANSIENT_LOCAL,
                             history=HistoryPolicy.KEEP_LAST)
#: QoS of joint_states: best effort matches both sensor-data and reliable publishers; a deep
#: history (0.2 s at 1 kHz) rides out bursts and pauses without losing a state.
JOINT_STATE_QOS = QoSProfile(depth=200, reliability=ReliabilityPolicy.BEST_EFFORT,
                             durability=DurabilityPolicy.VOLATILE,
                             history=HistoryPolicy.KEEP_LAST)

_THROTTLE_S = 5.0


def topic_token(frame):
    """A frame name made safe as one token of a ROS topic name."""
    token = re.sub(r'[^A-Za-z0-9_]', '_', frame)
    return token if token and not token[0].isdigit() else 'f_' + token


@dataclass(frozen=True, eq=False)
class Serving:
    """What the node serves, replaced whole: the model, the merger holding its latest joint
    state, the settings validated against it and the output messages built for both.
    """

    model: object
    merger: JointStateMerger
    settings: settings.NodeSettings
    messages: outputs.OutputMessages


class DynamicsNode(Node):
    """Wires one :class:`~ros_dynamics.engine.RobotModel` to topics; see the module docstring."""

    def __init__(self, **kwargs):
        super().__init__('ros_dynamics', **kwargs)
        try:
            values = settings.declare_parameters(self)
            settings.validate(values)
        except SettingsError as err:
            raise SystemExit(f'ros_dynamics: {err}') from None
        self._serving = None         # Serving, or None before the first model
        self._pending = None         # (model, settings) validated, applied after the parameters
        self._followers = []         # callbacks told of every new model or settings
        self._tip_pubs = {}          # tip -> (pose, twist, Jacobian publishers)
        self._wrenches = {}          # tip -> (frame, F_frame (6,)), replaced whole
        self._trajectory = None      # (Trajectory, start Time, index in q of its joints)
        self._last_markers = 0.0
        self._last_stamp = None
        self.diagnostics = Diagnostics()

        self._gravity_pub = self.create_publisher(JointState, 'gravity_torques', 10)
        self._command_pub = self.create_publisher(Float64MultiArray, 'gravity_command', 10)
        self._ff_pub = self.create_publisher(Float64MultiArray, 'feedforward_command', 10)
        self._ff_traj_pub = self.create_publisher(JointTrajectory, 'feedforward_trajectory', 10)
        self._marker_pub = self.create_publisher(MarkerArray, 'markers', 10)
        self._diag_pub = self.create_publisher(DiagnosticArray, '/diagnostics', 10)
        self._joint_state_sub = self.create_subscription(
            JointState, 'joint_states', self._on_joint_state, JOINT_STATE_QOS)
        self.create_subscription(JointTrajectory, 'joint_trajectory', self._on_trajectory, 10)
        self.create_subscription(String, 'robot_description', self._on_description_msg,
                                 DESCRIPTION_QOS)
        self.add_on_set_parameters_callback(self._on_set_parameters)
        self.add_post_set_parameters_callback(self._apply_parameters)
        self.create_timer(1.0, self._publish_diagnostics)
        self._publish_rate = values['publish_rate']          # read-only
        if self._publish_rate > 0:
            self.create_timer(1.0 / self._publish_rate, self._on_rate_timer)
        self._load_initial_description(values)

    # --- parameters ---------------------------------------------------------------------------

    def _on_set_parameters(self, params):
        """Validate a change with every other value (applied by :meth:`_apply_parameters`)."""
        serving = self._serving
        model = serving.model if serving is not None else None
        values = settings.parameter_values(self, {p.name: p.value for p in params})
        try:
            self._pending = (model, settings.validate(values, model))
        except SettingsError as err:
            return SetParametersResult(successful=False, reason=str(err))
        return SetParametersResult(successful=True)

    def _apply_parameters(self, _params):
        """Serve the settings :meth:`_on_set_parameters` validated, if still for this model."""
        (model, new), self._pending = self._pending or (None, None), None
        serving = self._serving
        if new is not None and serving is not None and serving.model is model:
            self._serve(model, serving.merger, new)

    # --- model ------------------------------------------------------------------------------

    def _load_initial_description(self, values):
        try:
            xml, source = initial_description(values['robot_description'], values['urdf_file'])
        except DescriptionRefused as err:
            raise SystemExit(f'ros_dynamics: {err}') from None
        if xml is None:
            self.get_logger().info('waiting for a robot description on the robot_description '
                                   'topic')
            return
        try:
            self._load(xml, source)
        except DescriptionRefused as err:
            raise SystemExit(f'ros_dynamics: the robot description from {source} is invalid: '
                             f'{err}') from None
        except SettingsError as err:
            raise SystemExit(f'ros_dynamics: {err}') from None

    def _on_description_msg(self, msg):
        try:
            self._load(msg.data, TOPIC_SOURCE)
        except (DescriptionRefused, SettingsError):
            pass                                      # logged and counted by _load

    def _load(self, xml, source):
        """Build a model, validate the parameters against it and serve both; on failure log
        and re-raise (:class:`DescriptionRefused` or :class:`SettingsError`), the old model
        keeps serving.
        """
        try:
            model = build_model(xml, strict=self.get_parameter('strict_inertia').value)
            new = settings.validate(settings.parameter_values(self), model)
        except (DescriptionRefused, SettingsError) as err:
            self.diagnostics.count('descriptions_refused')
            self.get_logger().error(f'refused the robot description from {source}: {err}'
                                    + ('; the previous model keeps serving'
                                       if self._serving is not None else ''))
            raise
        for note in model.warnings:
            self.get_logger().warning(f'robot description: {note}')
        self._serve(model, JointStateMerger(model.joint_names, model.mimic_joint_names), new)
        self._trajectory = None
        self.get_logger().info(f'model {model.name!r} from {source}: {model.nq} joints, '
                               f'{len(model.frame_names)} frames, tips {list(new.tips)}')

    def _serve(self, model, merger, new):
        """Serve ``model`` with settings ``new``: their dynamics swapped into the model, topics
        of new tips created, then one assignment; followers are told.
        """
        model.settings = new.dynamics
        for tip in new.tips:
            if tip not in self._tip_pubs:
                token = topic_token(tip)
                self._tip_pubs[tip] = (
                    self.create_publisher(PoseStamped, f'poses/{token}', 10),
                    self.create_publisher(TwistStamped, f'twists/{token}', 10),
                    self.create_publisher(Float64MultiArray, f'jacobians/{token}', 10))
                self.create_subscription(WrenchStamped, f'wrenches/{token}',
                                         lambda m, t=tip: self._on_wrench(t, m), 10)
        self._serving = Serving(model, merger, new, outputs.message_templates(model, new))
        for follower in self._followers:
            follower(model, new)

    def follow(self, callback):
        """Call ``callback(model, settings)`` for the model serving now (if any) and for every
        model or settings served after it.
        """
        self._followers.append(callback)
        serving = self._serving
        if serving is not None:
            callback(serving.model, serving.settings)

    @property
    def model(self):
        """The model currently serving (swapped atomically), or None."""
        serving = self._serving
        return serving.model if serving is not None else None

    def latest_q(self):
        """Latest complete joint positions (nq,), or None before every joint was heard of."""
        serving = self._serving
        if serving is None or not serving.merger.complete:
            return None
        return serving.merger.q.copy()

    # --- inputs -------------------------------------------------------------------------------

    def _on_joint_state(self, msg):
        self._serve_joint_state(msg)
        # Joint states that queued up meanwhile are taken here, one after the other, without a
        # trip through the executor each: its wait-set bookkeeping costs about as much as
        # serving a message, so a node that fell behind at 1 kHz would not catch up otherwise.
        sub = self._joint_state_sub
        for _ in range(JOINT_STATE_QOS.depth):
            with sub.handle:
                taken = sub.handle.take_message(sub.msg_type, sub.raw)
            if taken is None:
                return
            self._serve_joint_state(taken[0])

    def _serve_joint_state(self, msg):
        self.diagnostics.count('joint_states')
        serving = self._serving
        if serving is None:
            self.get_logger().warning('joint states received but no robot model is loaded yet',
                                      throttle_duration_sec=_THROTTLE_S)
            return
        merger = serving.merger
        try:
            unknown = merger.update(msg.name, msg.position, msg.velocity)
        except InvalidJointState as err:
            self.diagnostics.count('dropped')
            self.get_logger().warning(f'dropped a joint state: {err}',
                                      throttle_duration_sec=_THROTTLE_S)
            return
        if unknown:
            self.get_logger().warning(f'joint states name joints the model does not have: '
                                      f'{unknown}; ignored', once=True)
        if not merger.complete:
            missing = [n for n, r in zip(merger.joint_names, merger.received) if not r]
            self.get_logger().warning(f'waiting for joint states of {missing}',
                                      throttle_duration_sec=_THROTTLE_S)
            return
        stamp = msg.header.stamp
        last = self._last_stamp
        if last is not None and (stamp.sec, stamp.nanosec) < (last.sec, last.nanosec):
            # Served all the same (a simulation restarting its clock does this), but reported.
            self.diagnostics.count('stamps_backwards')
            self.get_logger().warning('joint state timestamps went backwards',
                                      throttle_duration_sec=_THROTTLE_S)
        self._last_stamp = stamp
        if self._publish_rate <= 0:
            self._compute_and_publish(serving, merger.q.copy(), merger.qd.copy(), stamp)

    def _on_rate_timer(self):
        serving = self._serving
        if serving is not None and serving.merger.complete:
            self._compute_and_publish(serving, serving.merger.q.copy(),
                                      serving.merger.qd.copy(), self.get_clock().now().to_msg())

    def _on_wrench(self, tip, msg):
        F_frame = wrench_to_vector6(msg.wrench)
        model = self.model
        frame = msg.header.frame_id or tip
        if not np.all(np.isfinite(F_frame)) or (model is not None
                                                and frame not in model.frame_names):
            self.diagnostics.count('wrenches_rejected')
            self.get_logger().warning(f'rejected a wrench for {tip!r}: NaN/Inf or unknown frame '
                                      f'{frame!r}', throttle_duration_sec=_THROTTLE_S)
            return
        wrenches = dict(self._wrenches)
        if np.any(F_frame):
            wrenches[tip] = (frame, F_frame)
        else:
            wrenches.pop(tip, None)
        self._wrenches = wrenches

    def _on_trajectory(self, msg):
        serving = self._serving
        if serving is None:
            self.get_logger().warning('trajectory received but no robot model is loaded yet',
                                      throttle_duration_sec=_THROTTLE_S)
            return
        model = serving.model
        try:
            trajectory = from_message(msg, model.joint_names)
        except InvalidTrajectory as err:
            self.diagnostics.count('trajectories_rejected')
            self.get_logger().warning(f'rejected a trajectory: {err}',
                                      throttle_duration_sec=_THROTTLE_S)
            return
        index = np.array([model.joint_index(j) for j in trajectory.joint_names], dtype=int)
        q = serving.merger.q.copy() if serving.merger.complete else model.middle_configuration()
        self._ff_traj_pub.publish(outputs.feedforward_trajectory(
            model, serving.settings, msg, trajectory, index, q))
        stamp = Time.from_msg(msg.header.stamp)
        start = stamp if stamp.nanoseconds > 0 else self.get_clock().now()
        self._trajectory = (trajectory, start, index)
        self.diagnostics.count('trajectories')

    # --- outputs ------------------------------------------------------------------------------

    def _compute_and_publish(self, serving, q, qd, stamp):
        started = time.perf_counter()
        model, current, messages = serving.model, serving.settings, serving.messages
        on = current.outputs
        state = outputs.kinematics_pass(model, current, q, qd)
        jacobians = outputs.TipJacobians(state)
        tau = outputs.holding_torques(model, state, current, self._wrenches, jacobians)
        if on.gravity:
            self._gravity_pub.publish(
                outputs.gravity_joint_state(model, tau, stamp, messages.gravity))
            self._command_pub.publish(outputs.gravity_command(current, tau, messages.command))
        for tip, *tip_messages in outputs.tip_messages(model, state, current, qd, stamp,
                                                       jacobians, messages):
            for publisher, msg in zip(self._tip_pubs[tip], tip_messages):
                if msg is not None:
                    publisher.publish(msg)
        if on.feedforward and self._trajectory is not None:
            self._publish_feedforward(serving, q)
        if on.markers and self._markers_due(current.markers_rate):
            self._marker_pub.publish(outputs.markers_message(model, state, current, tau, stamp,
                                                             jacobians))
        self.diagnostics.published(time.perf_counter() - started)

    def _publish_feedforward(self, serving, q):
        playing = self._trajectory
        trajectory, start, index = playing
        t = (self.get_clock().now() - start).nanoseconds * 1e-9
        if t > trajectory.duration:
            if self._trajectory is playing:
                self._trajectory = None
            return
        self._ff_pub.publish(outputs.feedforward_command(serving.model, serving.settings, q,
                                                         trajectory, index, t))

    def _markers_due(self, rate):
        now = time.monotonic()
        if now - self._last_markers < 1.0 / rate:
            return False
        self._last_markers = now
        return True

    def _publish_diagnostics(self):
        self._diag_pub.publish(self.diagnostics.report(
            f'{self.get_name()}: dynamics', self.model, self.get_clock().now().to_msg()))


def main(args=None):
    """Entry point of ``ros2 run ros_dynamics dynamics_node``: the dynamics node and its
    services node, each on its own executor thread.
    """
    return run_nodes(_build_nodes, args)


def _build_nodes():
    node = DynamicsNode()
    services = KinematicsServiceNode(node)
    if not services.available:
        services.destroy_node()
        return [node]
    node.follow(lambda model, current: services.serve(model, current.ik))
    return [node, services]


if __name__ == '__main__':
    sys.exit(main())
