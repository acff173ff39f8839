"""Publishing the outputs of the dynamics node: one kinematics pass per joint state, every
output read from it (:mod:`~ros_dynamics.ros.outputs`, :mod:`~ros_dynamics.ros.base_outputs`;
the external-torque observer's through :mod:`~ros_dynamics.ros.effort_monitor`), published only
when all its numbers are finite.

The control path first: the gravity torques and commands and the feedforward command are
computed and published before anything else, at every joint state (the commands not from a
stale one); then the observer (every state: it integrates) with the collision signal and the
external torques; then the per-tip outputs (poses, twists, Jacobians, wrench estimates), the
center of mass and the momentum at most at ``tip_outputs_rate`` on the joint-state stamps
(:class:`StampDecimator`); the rviz markers at most at ``markers_rate``, cleared (DELETEALL)
when what they show changes.

A floating or planar base whose contacts cannot hold it in a state (a
:class:`~ros_dynamics.engine.exceptions.StanceError`): ``gravity_torques`` and
``gravity_command`` are not published for that state (counted as ``stances_unheld``, a
throttled warning, diagnostics WARN), the torque arrows are cleared; the other outputs are.
"""
import time

from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import PointStamped, WrenchStamped
import numpy as np
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray
from trajectory_msgs.msg import JointTrajectory
from visualization_msgs.msg import MarkerArray

from ..engine.exceptions import StanceError
from . import base_outputs, markers, outputs
from .effort_monitor import EffortMonitor
from .outputs import NonFiniteOutput
from .tip_topics import TipTopics, output_publisher

#: History depth of the output topics.
DEPTH = 10


class OutputPublisher:
    """The output topics of one node and what the markers last showed."""

    def __init__(self, node, diagnostics, log, on_wrench):
        """``on_wrench(tip, msg)`` is called with each wrench received for a tip."""
        self._node = node
        self._diagnostics = diagnostics
        self._log = log
        def publisher(kind, topic):
            return output_publisher(node, kind, topic)

        self._gravity = publisher(JointState, 'gravity_torques')
        self._command = publisher(Float64MultiArray, 'gravity_command')
        self._ff = publisher(Float64MultiArray, 'feedforward_command')
        self.ff_trajectory = publisher(JointTrajectory, 'feedforward_trajectory')
        self._markers = publisher(MarkerArray, 'markers')
        self._com = publisher(PointStamped, 'center_of_mass')
        self._momentum = publisher(WrenchStamped, 'momentum')
        self.diagnostics = node.create_publisher(DiagnosticArray, '/diagnostics', DEPTH)
        self.tips = TipTopics(node, on_wrench)
        self.efforts = EffortMonitor(node, diagnostics, log, self.tips)
        self._last_markers = 0.0
        self._shown = None            # (model, tips, frame id) the markers last drawn show
        self._tip_outputs_due = StampDecimator()

    def serve(self, model, settings):
        """Topics for ``settings``' tips; the markers cleared when what they show changes."""
        self.tips.update(settings.tips, settings.tip_tokens)
        self.efforts.serve(model, settings)
        frame_id = settings.frame_prefix + settings.base_frame
        showing = (model, settings.tips + settings.base.contact_frames, frame_id) \
            if settings.outputs.markers else None
        shown = self._shown
        if shown is not None and (showing is None or shown[0] is not showing[0]
                                  or shown[1:] != showing[1:]):
            self._markers.publish(markers.delete_all(shown[2],
                                                     self._node.get_clock().now().to_msg()))
            self._shown = None
            self._last_markers = 0.0

    def publish(self, serving, q, qd, stamp, ready, wrenches, feedforward, effort=None,
                commands=True):
        """Compute and publish the outputs of one joint state (positions ``q``, velocities
        ``qd`` (nq,)), the control path first: gravity torques and commands, the feedforward
        command, the observer's collision signal and external torques, at every joint state;
        then the per-tip outputs, the center of mass and the momentum when
        ``tip_outputs_rate`` lets them (:class:`StampDecimator`), and the markers at
        ``markers_rate``. ``ready``: per tip, whether the joints it depends on are known
        (None: all); ``feedforward(model, settings, q)``: the feedforward command of the
        trajectory playing, or None; ``effort``: the joint state's
        :class:`~ros_dynamics.ros.effort_monitor.EffortSample`, or None; ``commands``: False
        for a stale joint state (no command from it). Nothing of a pass whose numbers are not
        finite is published (counted, warned).
        """
        started = time.perf_counter()
        model, current = serving.model, serving.settings
        state = outputs.kinematics_pass(model, current, q, qd, velocities=effort is not None)
        jacobians = outputs.TipJacobians(state)
        try:
            tau = self._publish_control(serving, state, q, stamp, wrenches, jacobians,
                                        feedforward, commands)
        except NonFiniteOutput as err:
            self._not_finite(err)
            return
        due = self._tip_outputs_due.due(stamp, current.tip_outputs_rate)
        if not due:
            self._diagnostics.count('tip_outputs_decimated')
        try:
            self.efforts.update(serving, state, effort, ready, jacobians, wrenches=due)
        except NonFiniteOutput as err:
            self._not_finite(err)
        try:
            if due:
                self._publish_tips(serving, state, qd, stamp, ready, jacobians)
                self._publish_whole_robot(model, state, current, stamp)
            if current.outputs.markers and self._markers_due(current.markers_rate):
                self._publish_markers(model, state, current, tau, stamp, jacobians, ready)
        except NonFiniteOutput as err:
            self._not_finite(err)
        self._diagnostics.published(time.perf_counter() - started)

    def _publish_control(self, serving, state, q, stamp, wrenches, jacobians, feedforward,
                         commands):
        """Gravity torques (and, unless ``commands`` is False, the gravity and feedforward
        commands) of one pass; returns the torques (None when the stance cannot hold the
        robot).
        """
        model, current, messages = serving.model, serving.settings, serving.messages
        on = current.outputs
        tau = self._gravity_torques(model, state, current, wrenches, jacobians)
        if on.gravity and tau is not None:
            self._gravity.publish(outputs.gravity_joint_state(model, tau, stamp,
                                                              messages.gravity))
            if commands:
                self._command.publish(outputs.gravity_command(current, tau, messages.command))
        command = feedforward(model, current, q) if on.feedforward and commands else None
        if command is not None:
            self._ff.publish(command)
        return tau

    def _publish_tips(self, serving, state, qd, stamp, ready, jacobians):
        model, current, messages = serving.model, serving.settings, serving.messages
        tips = outputs.tip_messages(model, state, current, qd, stamp, jacobians, messages,
                                    ready)
        for tip, *tip_messages in tips:
            for publisher, msg in zip(self.tips.publishers(tip), tip_messages):
                if msg is not None:
                    publisher.publish(msg)

    def _publish_markers(self, model, state, current, tau, stamp, jacobians, ready):
        shown = np.zeros(len(model.actuated_joint_names)) if tau is None else tau
        msg = outputs.markers_message(model, state, current, shown, stamp, jacobians, ready)
        msg.markers.extend(base_outputs.support_markers(model, state, current, stamp,
                                                        markers.make_marker))
        self._markers.publish(msg)
        self._shown = (model, current.tips + current.base.contact_frames,
                       current.frame_prefix + current.base_frame)

    def _gravity_torques(self, model, state, current, wrenches, jacobians):
        """The actuated gravity torques, or None when the stance cannot hold the robot."""
        if wrenches and current.base.root_joint:
            self._log.once('wrenches at the tips are not part of the contact-consistent '
                           'torques of a floating base; ignored there', 'floating wrenches')
        try:
            return base_outputs.actuated_gravity(model, state, current, wrenches, jacobians)
        except StanceError as err:
            self._diagnostics.count('stances_unheld')
            self._log.warning(f'gravity torques not published: {err}', cause='stance')
            return None

    def _publish_whole_robot(self, model, state, current, stamp):
        """Center of mass and centroidal momentum, each when switched on."""
        on = current.outputs
        if on.center_of_mass:
            msg = base_outputs.center_of_mass_message(model, state, current, stamp)
            if msg is not None:
                self._com.publish(msg)
        if on.momentum:
            msg = base_outputs.momentum_message(model, state, current, stamp)
            if msg is not None:
                self._momentum.publish(msg)

    def _not_finite(self, err):
        self._diagnostics.count('outputs_not_finite')
        self._log.warning(f'outputs not published: {err} (huge joint values or description?)')

    def _markers_due(self, rate):
        now = time.monotonic()
        if now - self._last_markers < 1.0 / rate:
            return False
        self._last_markers = now
        return True


class StampDecimator:
    """Lets an output through at most at a rate, on the joint states' stamps (simulated time
    included; a zero stamp, unstamped, on the monotonic clock of the process): due at the first
    stamp, when the stamp is a period past the last one let through, or when it went backwards
    (a simulation restarting its clock).
    """

    def __init__(self):
        self._last_ns = None

    def due(self, stamp, rate):
        """Whether the output of the joint state stamped ``stamp`` is due at ``rate`` [Hz]
        (0: every joint state).
        """
        ns = stamp.sec * 1_000_000_000 + stamp.nanosec or time.monotonic_ns()
        last = self._last_ns
        # A hundredth of a period of slack: stamps at exactly the rate are all let through.
        if rate > 0 and last is not None and 0 <= ns - last < 0.99e9 / rate:
            return False
        self._last_ns = ns
        return True
