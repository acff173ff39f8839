"""The ros_dynamics node: gravity and feedforward torques, tip poses, twists and Jacobians, live.

The wiring of the node's parts. Per joint state (or at ``publish_rate``): validate, merge into
the latest state by name (:mod:`~ros_dynamics.ros.joint_state_merger`), then one kinematics pass
and the outputs read from it, the torque commands first and the per-tip outputs at their own
rate (:mod:`~ros_dynamics.ros.output_publisher`), stamped with the joint state's time. No
command is computed from a joint state older than ``command.max_state_age`` on the node's
clock (counted as ``stale_states``).

Outputs flow as soon as the joints they depend on are known: a tip's once the joints moving it
(and the base frame) have been heard of, the whole-robot ones once any joint has, joints never
heard of at their defaults (``initial_positions``, else 0 clamped into the limits);
``require_all_joints`` waits for every joint instead.

Parameters are declared by :mod:`~ros_dynamics.ros.parameters` and validated by
:mod:`~ros_dynamics.ros.settings`: validated in the parameter callback, applied afterwards as one
value. Models come from :mod:`~ros_dynamics.ros.model_loading`: a description arriving later is
bounded, built on a thread of its own while the old model keeps answering, and swapped in with
the settings validated against it; an invalid one is refused and the old model keeps serving.
What belonged to a replaced model or tip (topics, wrenches, the trajectory, markers) goes.

A floating or planar base (``root_joint``): joint states carry the actuated joints, the base
state comes from odometry (:mod:`~ros_dynamics.ros.odometry_input`), gravity torques hold the
robot on its ``contact_frames`` (:mod:`~ros_dynamics.ros.base_outputs`).

Every callback is :func:`~ros_dynamics.ros.guard.guarded`: an unexpected exception is logged,
counted and the input dropped. Logs are throttled per cause
(:class:`~ros_dynamics.ros.throttled_log.ThrottledLog`); counters and the 1 Hz status are
:mod:`~ros_dynamics.ros.diagnostics`. Services ``~/compute_fk`` and ``~/solve_ik`` run on a
companion node (:class:`~ros_dynamics.ros.kinematics_services.KinematicsServiceNode`), and
``~/identify_payload`` (:mod:`~ros_dynamics.ros.identify_service`) beside them. Joint states with
efforts feed the external-torque observer (:mod:`~ros_dynamics.ros.effort_monitor`).
"""
from dataclasses import dataclass
import sys
import time

import numpy as np
from rcl_interfaces.msg import SetParametersResult
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from rclpy.qos_overriding_options import QoSOverridingOptions
from sensor_msgs.msg import JointState
from std_msgs.msg import String
from trajectory_msgs.msg import JointTrajectory

from ..engine.kinematics import MAX_JOINT_VALUE
from . import outputs, settings
from .conversions import wrench_to_vector6
from .diagnostics import Diagnostics
from .frame_names import FramePrefix
from .guard import guarded
from .identify_service import IdentifyPayloadService
from .joint_state_merger import InvalidJointState, JointStateMerger
from .kinematics_services import KinematicsServiceNode
from .memory import release_free_memory
from .model_loading import (
    TOPIC_SOURCE,
    DescriptionBuilder,
    DescriptionRefused,
    build_model,
    check_limits,
    initial_description,
)
from .newest_worker import NewestWorker
from .odometry_input import OdometryInput
from .output_publisher import OutputPublisher
from .parameters import SPECS, SettingsError, declare_parameters, parameter_values
from .process import run_nodes
from .throttled_log import ThrottledLog
from .trajectory_player import TrajectoryPlayer

#: QoS of the robot_description topic, as robot_state_publisher publishes it.
DESCRIPTION_QOS = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                             durability=DurabilityPolicy.TRANSIENT_LOCAL,
                             history=HistoryPolicy.KEEP_LAST)
#: QoS of joint_states: best effort matches both sensor-data and reliable publishers; a deep
#: history (0.2 s at 1 kHz) rides out bursts and pauses without losing a state.
JOINT_STATE_QOS = QoSProfile(depth=200, reliability=ReliabilityPolicy.BEST_EFFORT,
                             durability=DurabilityPolicy.VOLATILE,
                             history=HistoryPolicy.KEEP_LAST)
#: Longest time [s] one joint-state callback keeps draining the queue before it gives the
#: executor a turn (timers, /clock, services).
DRAIN_BUDGET = 0.005
#: Furthest [s] a joint state may be stamped ahead of the node clock and still be commanded
#: from: a simulator's /clock can be coarse (Gazebo Classic publishes it at 10 Hz by default),
#: so states lead it by up to its period; a state further ahead comes from before the clock
#: went back (in flight across a simulation reset) or from another clock.
MAX_STAMP_LEAD = 1.0


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
        self._log = ThrottledLog(self.get_logger())
        try:
            values = declare_parameters(self)
            settings.validate(values)
        except SettingsError as err:
            raise SystemExit(f'ros_dynamics: {err}') from None
        self.diagnostics = Diagnostics(values['diagnostics.quiet_period'])
        self._serving = None         # Serving, or None before the first model
        self._pending = None         # (model, settings) validated, applied after the parameters
        self._followers = []         # callbacks told of every new model or settings
        self._wrenches = {}          # tip -> (frame, F_frame (6,)), replaced whole
        self._last_stamp = None
        self._defaults_told = None   # the model whose defaulted joints were named in a warning
        self._outputs = OutputPublisher(self, self.diagnostics, self._log,
                                        self._guard(self._on_wrench, 'wrenches'))
        self.payload_recorder = self._outputs.efforts.recorder
        self._player = TrajectoryPlayer(self.get_clock(), self._outputs.ff_trajectory,
                                        self.diagnostics, self._log)
        self._trajectories = NewestWorker(
            self._guard(self._receive_trajectory, 'joint_trajectory'), 'trajectories',
            lambda: self.diagnostics.count('trajectories_superseded'))
        self._base = OdometryInput(self, values['root_joint'], lambda: self._serving,
                                   self.diagnostics, self._log, self._guard)
        self._serve_joint_state = self._guard(self._serve_joint_state, 'joint_states')
        self._joint_state_sub = self.create_subscription(
            JointState, 'joint_states', self._guard(self._on_joint_state, 'joint_states'),
            JOINT_STATE_QOS, qos_overriding_options=QoSOverridingOptions.with_default_policies())
        # Raw: read on the trajectory thread (rclpy's own conversion would hold every thread).
        self.create_subscription(JointTrajectory, 'joint_trajectory',
                                 self._guard(self._on_trajectory, 'joint_trajectory'), 10,
                                 raw=True)
        self.create_subscription(String, 'robot_description',
                                 self._guard(self._on_description_msg, 'robot_description'),
                                 DESCRIPTION_QOS)
        built = self.create_guard_condition(self._guard(self._on_built, 'robot_description'))
        self._builder = DescriptionBuilder(self._build, built.trigger)
        self.add_on_set_parameters_callback(self._guard(self._on_set_parameters, 'parameters',
                                                        _refused))
        self.add_post_set_parameters_callback(self._guard(self._apply_parameters, 'parameters'))
        self.create_timer(1.0, self._guard(self._publish_diagnostics, 'diagnostics'))
        self._publish_rate = values['publish_rate']          # read-only
        if self._publish_rate > 0:
            self.create_timer(1.0 / self._publish_rate,
                              self._guard(self._on_rate_timer, 'publish_rate timer'))
        self._load_initial_description(values)

    def _guard(self, callback, what, fallback=None):
        return guarded(callback, what, self._log, self.diagnostics, fallback)

    # --- parameters ---------------------------------------------------------------------------

    def _on_set_parameters(self, params):
        """Validate a change with every other value (applied by :meth:`_apply_parameters`)."""
        changed = {p.name: p.value for p in params if p.name in SPECS}
        if not changed:
            return SetParametersResult(successful=True)     # use_sim_time, qos_overrides.*
        serving = self._serving
        model = serving.model if serving is not None else None
        try:
            self._pending = (model, settings.validate(parameter_values(self, changed), model))
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
            if xml is None:
                self.get_logger().info('waiting for a robot description on the '
                                       'robot_description topic')
                return
            check_limits(xml, settings.input_limits(values))
            self._adopt(self._build(xml), source)
        except DescriptionRefused as err:
            raise SystemExit(f'ros_dynamics: the robot description is refused: {err}') from None
        except SettingsError as err:
            raise SystemExit(f'ros_dynamics: {err}') from None

    def _build(self, xml):
        return build_model(xml, strict=self.get_parameter('strict_inertia').value,
                           root_joint=self.get_parameter('root_joint').value)

    def _on_description_msg(self, msg):
        try:
            check_limits(msg.data, settings.input_limits(parameter_values(self)))
        except DescriptionRefused as err:
            self._refuse(err, TOPIC_SOURCE)
            return
        self._builder.submit(msg.data, TOPIC_SOURCE)

    def _on_built(self):
        outcome = self._builder.take()
        if outcome is None:
            return
        model, error, source = outcome
        if error is not None:
            self._refuse(error, source)
            return
        try:
            self._adopt(model, source)
        except SettingsError as err:
            self._refuse(err, source)

    def _refuse(self, err, source):
        self.diagnostics.count('descriptions_refused')
        self._log.error(f'refused the robot description from {source}: {err}'
                        + ('; the previous model keeps serving' if self._serving else ''))

    def _adopt(self, model, source):
        """Validate the parameters against a built model and serve both (raises
        :class:`SettingsError`, the old model then keeps serving).
        """
        new = settings.validate(parameter_values(self), model)
        for note in model.warnings[:20]:
            self._log.warning(f'robot description: {note}')
        self._serve(model, JointStateMerger(model.actuated_joint_names, model.mimic_joint_names,
                                            new.initial_q[model.actuated_q_index]), new)
        self._log.info(f'model {model.name!r} from {source}: {model.nq} coordinates, '
                       f'{len(model.frame_names)} frames, tips {list(new.tips)}')

    def _serve(self, model, merger, new):
        """Serve ``model`` with settings ``new``: their dynamics swapped into the model, the
        topics of the tips (and only those) kept, then one assignment; followers are told.
        """
        old = self._serving
        model.settings = new.dynamics
        self._outputs.serve(model, new)
        if old is None or old.model is not model:
            self._player.stop()
            self._wrenches = {}
        else:
            merger.set_defaults(new.initial_q[model.actuated_q_index])
            self._wrenches = {t: w for t, w in self._wrenches.items() if t in new.tips}
        self.diagnostics.quiet_period = new.quiet_period
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
        """Latest configuration (nq,): joints never heard of at their defaults, a floating or
        planar base from odometry (else ``base_pose``); None before any joint was heard of
        (before every one with ``require_all_joints``).
        """
        serving = self._serving
        if serving is None or not serving.merger.heard_any or (
                serving.settings.require_all_joints and not serving.merger.complete):
            return None
        return self._base.state(serving)[0]

    # --- inputs -------------------------------------------------------------------------------

    def _on_joint_state(self, msg):
        self._serve_joint_state(msg)
        # Queued joint states are taken here without a trip through the executor each (its
        # wait-set bookkeeping costs about a message's serving: a 1 kHz backlog must drain),
        # but for at most DRAIN_BUDGET: the executor must get its turn, or /clock stands still
        # (use_sim_time) and states that wait in the queue are judged younger than they are.
        sub = self._joint_state_sub
        deadline = time.monotonic() + DRAIN_BUDGET
        for _ in range(JOINT_STATE_QOS.depth):
            if time.monotonic() > deadline:
                return
            with sub.handle:
                taken = sub.handle.take_message(sub.msg_type, sub.raw)
            if taken is None:
                return
            self._serve_joint_state(taken[0])

    def _serve_joint_state(self, msg):
        self.diagnostics.count('joint_states')
        serving = self._serving
        if serving is None:
            self._log.warning('joint states received but no robot model is loaded yet')
            return
        merger = serving.merger
        try:
            unknown, some = merger.update(msg.name, msg.position, msg.velocity)
        except InvalidJointState as err:
            self.diagnostics.count('dropped')
            self._log.warning(f'dropped a joint state: {err}')
            return
        if unknown:
            more = f' and {unknown - len(some)} more' if unknown > len(some) else ''
            self._log.warning(f'joint states name joints the model does not have: {some}'
                              f'{more}; ignored', cause='unknown joints')
        effort = self._outputs.efforts.take(serving, merger, msg)
        ready = self._readiness(serving)
        if ready is False:
            return
        stamp = msg.header.stamp
        last = self._last_stamp
        if last is not None and (stamp.sec, stamp.nanosec) < (last.sec, last.nanosec):
            # Served all the same (a simulation restarting its clock does this), but reported.
            self.diagnostics.count('stamps_backwards')
            self._log.warning('joint state timestamps went backwards')
        self._last_stamp = stamp
        if self._publish_rate <= 0:
            self._outputs.publish(serving, *self._base.state(serving), stamp, ready,
                                  self._wrenches, self._player.feedforward, effort,
                                  commands=self._fresh(stamp, serving.settings.max_state_age))

    def _fresh(self, stamp, max_age):
        """Whether a joint state stamped ``stamp`` is recent enough to command from: its age
        on the node clock at most ``max_age`` [s] (0: no bound), and stamped no more than
        :data:`MAX_STAMP_LEAD` ahead of that clock (further: a state from before the clock went
        back, or from a clock the node does not share); a zero stamp counts as current.
        """
        if max_age <= 0 or (stamp.sec == 0 and stamp.nanosec == 0):
            return True
        now_ns = self.get_clock().now().nanoseconds
        age = (now_ns - (stamp.sec * 1_000_000_000 + stamp.nanosec)) * 1e-9
        if -MAX_STAMP_LEAD <= age <= max_age:
            return True
        self.diagnostics.count('stale_states')
        when = f'{age:.3g} s old' if age > 0 else f'stamped {-age:.3g} s ahead of the node clock'
        self._log.warning(f'a joint state {when} (command.max_state_age = {max_age:g} s): no '
                          'command computed from it; the node may be behind, its clock gone '
                          'back, or the stamps in another clock (use_sim_time?)',
                          cause='stale state')
        return False

    def _readiness(self, serving):
        """False while nothing may be published; else per tip whether the joints it depends
        on are known (None: all are). Names the joints at their defaults once per model.
        """
        merger, current = serving.merger, serving.settings
        if merger.complete:
            self.diagnostics.defaulted = []
            return None
        if current.require_all_joints or not merger.heard_any:
            self._log.warning(f'waiting for joint states of {merger.never_heard()[:20]}',
                              cause='waiting for joints')
            return False
        missing = merger.never_heard()
        self.diagnostics.defaulted = missing
        if self._defaults_told is not serving.model:
            self._defaults_told = serving.model
            defaults = ', '.join(f'{n}={merger.q[merger.joint_names.index(n)]:g}'
                                 for n in missing[:50])
            self._log.warning(f'joints never heard of are taken at their defaults '
                              f'(initial_positions, else 0 clamped into the limits) until they '
                              f'are: {defaults}' + (' ...' if len(missing) > 50 else ''),
                              cause='joints at defaults')
        received = merger.received
        return [bool(received[mask].all()) for mask in current.tip_joints]

    def _on_rate_timer(self):
        serving = self._serving
        if serving is None:
            return
        ready = self._readiness(serving)
        if ready is not False:
            last = self._last_stamp
            fresh = last is None or self._fresh(last, serving.settings.max_state_age)
            self._outputs.publish(serving, *self._base.state(serving),
                                  self.get_clock().now().to_msg(), ready, self._wrenches,
                                  self._player.feedforward, self._outputs.efforts.latest,
                                  commands=fresh)

    def _on_wrench(self, tip, msg):
        serving = self._serving
        if serving is None or tip not in serving.settings.tips:
            return
        model = serving.model
        F_frame = wrench_to_vector6(msg.wrench)
        frame = FramePrefix(serving.settings.frame_prefix).to_frame(msg.header.frame_id) or tip
        if not np.all(np.abs(F_frame) <= MAX_JOINT_VALUE) or frame not in model.frame_names:
            self.diagnostics.count('wrenches_rejected')
            self._log.warning(f'rejected a wrench for {tip!r}: NaN, Inf, beyond '
                              f'{MAX_JOINT_VALUE:g} or unknown frame {frame[:200]!r}')
            return
        wrenches = dict(self._wrenches)
        if np.any(F_frame):
            wrenches[tip] = (frame, F_frame)
        else:
            wrenches.pop(tip, None)
        self._wrenches = wrenches

    def _on_trajectory(self, data):
        serving = self._serving
        if serving is None:
            self._log.warning('trajectory received but no robot model is loaded yet')
            return
        q = self._base.state(serving)[0] if serving.merger.heard_any \
            else serving.model.middle_configuration()
        # Validated, splined and its feedforward computed off the executor: a huge trajectory
        # must not hold up the joint states (a 10^5-point one takes about a second).
        self._trajectories.submit((serving, data, q))

    def _receive_trajectory(self, job):
        self._player.receive(*job)

    def _publish_diagnostics(self):
        release_free_memory()              # freed memory back to the system, once a second
        self._base.report(self._serving)
        self._outputs.diagnostics.publish(self.diagnostics.report(
            f'{self.get_fully_qualified_name()}: dynamics', self.model,
            self.get_clock().now().to_msg()))


def _refused(params, error):
    """The answer to a parameter change whose check raised: refused, with the cause."""
    return SetParametersResult(successful=False,
                               reason=f'internal error: {type(error).__name__}: {error}'[:1000])


def main(args=None):
    """Entry point of ``ros2 run ros_dynamics dynamics_node``: the dynamics node and its
    services node, each on its own executor thread; returns the exit code.
    """
    return run_nodes(_build_nodes, args)


def _build_nodes():
    node = DynamicsNode()
    services = KinematicsServiceNode(node, node.diagnostics)
    if not services.available:
        services.destroy_node()
        return [node]
    identify = IdentifyPayloadService(services, node, node.payload_recorder, node.diagnostics)
    node.follow(lambda model, current: services.serve(model, current.ik, current.frame_prefix))
    node.follow(identify.serve)
    return [node, services]


if __name__ == '__main__':
    sys.exit(main())
