"""External torques, wrench estimates and the collision signal of the dynamics node.

Per joint state that carries efforts (merged by name like positions, validated the same way:
one per name, finite, at most :data:`~ros_dynamics.engine.kinematics.MAX_JOINT_VALUE`; bad ones
are dropped and counted, the positions still served), :class:`EffortMonitor` turns the
message into an :class:`EffortSample` once every joint is known and every actuated joint's
velocity and effort is; a message without efforts does not update the observer. From the
node's one kinematics pass of that joint state (computed with velocities), a
:class:`~ros_dynamics.engine.observers.MomentumObserver` of the model serving estimates the
external joint torques, ``dt`` taken from the header stamps: a stamp going backwards, repeated,
or more than ``efforts.max_stamp_gap`` after the previous one resets the observer (counted as
``observer_resets``). The observer reads the model's settings (payload, rotor inertia, gravity):
a change of them is not mistaken for a collision (the engine's observer carries its estimate
across it); a new model, gain or friction switch starts a new observer.

Published: ``external_torques`` (JointState, actuated joints, effort = estimate),
``wrench_estimates/<tip>`` (the wrench at each tip's origin that explains them, in
``base_frame`` axes; not published while the tip's Jacobian is near-singular) and
``collision`` (std_msgs/Bool, latched: True when any joint's estimate exceeds its threshold,
False when none does any more), with the joints named in the diagnostics.
"""
from dataclasses import dataclass

import numpy as np
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from std_msgs.msg import Bool

from ..engine import MomentumObserver
from . import effort_outputs
from .joint_state_merger import InvalidJointState
from .outputs import NonFiniteOutput
from .payload_recorder import PayloadRecorder
from .tip_topics import output_publisher

#: QoS of ``collision``: reliable and latched, so a monitor started late gets the current state.
COLLISION_QOS = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                           durability=DurabilityPolicy.TRANSIENT_LOCAL,
                           history=HistoryPolicy.KEEP_LAST)


@dataclass(frozen=True, eq=False)
class EffortSample:
    """One joint state's measured efforts: stamp ``t`` [s] (and as a message), efforts of the
    actuated joints as generalized forces ``tau`` (nv,) [N m or N].
    """

    t: float
    stamp: object
    tau: np.ndarray


def stamp_seconds(stamp):
    """A ``builtin_interfaces/Time`` in seconds."""
    return stamp.sec + 1e-9 * stamp.nanosec


class EffortMonitor:
    """The observer of the model serving, the effort outputs' publishers, the collision state,
    and the :class:`~ros_dynamics.ros.payload_recorder.PayloadRecorder` fed with every sample.
    All methods run on the node's streaming thread.
    """

    def __init__(self, node, diagnostics, log, tips):
        """``tips``: the node's :class:`~ros_dynamics.ros.tip_topics.TipTopics`."""
        self._diagnostics = diagnostics
        self._log = log
        self._tips = tips
        self._torques = output_publisher(node, JointState, 'external_torques')
        self._collision = node.create_publisher(Bool, 'collision', COLLISION_QOS)
        self._collision.publish(Bool(data=False))
        self.recorder = PayloadRecorder()
        self.latest = None            # the latest EffortSample
        self._observer = None
        self._observing = None        # (model, gain, friction) of the observer
        self._rows = None             # merger rows of the actuated joints
        self._message = None          # external_torques template of the model
        self._wrench_messages = {}    # tip -> WrenchStamped template
        self._last = None             # the sample the observer last took
        self._colliding = ()          # names of the joints in collision

    def serve(self, model, settings):
        """Observe ``model`` with ``settings``: a new observer for a new model, gain or friction
        switch (a settings change alone keeps it: the engine's observer handles it).
        """
        effort = settings.effort
        observing = (model, effort.gain, effort.friction)
        if self._observing is None or self._observing[0] is not model \
                or self._observing[1:] != observing[1:]:
            self._observer = MomentumObserver(model, effort.gain, friction=effort.friction)
            self._last = None
            if self._observing is None or self._observing[0] is not model:
                self._rows = effort_outputs.actuated_rows(model, model.joint_names)
                self._message = JointState(name=list(model.actuated_joint_names))
                self.latest = None
                self._set_collision(())
        self._observing = observing
        self._wrench_messages = {t: m for t, m in self._wrench_messages.items()
                                 if t in settings.tips}

    def take(self, serving, merger, msg):
        """The :class:`EffortSample` of a joint state just merged (its efforts merged too),
        or None: without efforts, with bad ones (dropped, counted), or while a joint's
        position, velocity or effort is still unknown. Fed to the recorder.
        """
        try:
            if not merger.update_efforts(msg.name, msg.effort):
                return None
        except InvalidJointState as err:
            self._diagnostics.count('efforts_dropped')
            self._log.warning(f'dropped the efforts of a joint state: {err}')
            return None
        rows = self._rows
        if not (merger.complete and merger.moving[rows].all()
                and merger.effort_received[rows].all()):
            missing = [merger.joint_names[i] for i in rows
                       if not (merger.moving[i] and merger.effort_received[i])]
            self._log.warning(f'the external-torque observer waits for joint states with the '
                              f'velocities and efforts of {missing[:20]} (and positions of '
                              f'{merger.never_heard()[:20]})', cause='observer waits')
            return None
        sample = EffortSample(stamp_seconds(msg.header.stamp), msg.header.stamp,
                              effort_outputs.measured_torques(serving.model, merger.effort, rows))
        self.latest = sample
        self.recorder.record(serving, merger.q, sample)
        return sample

    def update(self, serving, state, sample, ready, jacobians, wrenches=True):
        """Run the observer on ``sample`` with the kinematic pass ``state`` (computed with
        velocities) and publish: the collision signal first, then external torques and, when
        ``wrenches`` (the per-tip outputs are due), the wrench estimates of the tips ``ready``
        says (None: all), with the pass's tip Jacobians
        (:class:`~ros_dynamics.ros.outputs.TipJacobians`, shared with the other outputs). A
        sample already taken (the ``publish_rate`` timer serving the same joint state again) is
        skipped.
        """
        if sample is None or sample is self._last or self._observer is None \
                or state.model is not self._observer.model:
            return
        model, current = serving.model, serving.settings
        dt = 0.0
        if self._last is not None:
            dt = sample.t - self._last.t
            if not 0.0 < dt <= current.effort.max_stamp_gap:
                self._reset(f'joint-state stamps went {"backwards" if dt < 0 else "forward"} '
                            f'by {dt:.6g} s' if dt != 0 else 'joint-state stamps repeated',
                            'backwards' if dt <= 0 else 'gap', current.effort.max_stamp_gap)
                dt = 0.0
        self._last = sample
        tau_ext = self._observer.update_with_state(state, sample.tau, dt)
        if not np.all(np.isfinite(tau_ext)):
            self._observer.reset()
            raise NonFiniteOutput('external torques not finite')
        over = effort_outputs.joints_over(model, tau_ext, current.effort.thresholds)
        names = tuple(model.actuated_joint_names[i] for i in np.flatnonzero(over))
        if names and not self._colliding:
            self._diagnostics.count('collisions')
            torques = ', '.join(f'{model.actuated_joint_names[i]}={tau:.3g}' for i, tau in
                                enumerate(tau_ext[model.actuated_v_index]) if over[i])
            self._log.warning(f'collision: external torques above their thresholds: {torques}',
                              cause='collision')
        self._set_collision(names)
        on = current.outputs
        if on.external_torques:
            self._torques.publish(effort_outputs.external_torques_message(
                model, tau_ext, sample.stamp, self._message))
        if on.wrench_estimates and wrenches:
            self._publish_wrenches(current, state, tau_ext, sample.stamp, ready, jacobians)

    def _publish_wrenches(self, current, state, tau_ext, stamp, ready, jacobians):
        frame_id = current.frame_prefix + current.base_frame
        for k, tip in enumerate(current.tips):
            if ready is not None and not ready[k]:
                continue
            F_base, near_singular = effort_outputs.wrench_estimate(
                state, tau_ext, tip, current.base_frame, current.effort.force_only,
                jacobians.world(tip))
            if near_singular:
                self._diagnostics.count('wrench_estimates_singular')
                self._log.warning(f'wrench estimate of {tip!r} not published: its Jacobian is '
                                  'near-singular (some wrench directions are not observable; '
                                  'wrench_estimates.force_only estimates a force alone)',
                                  cause=f'singular wrench {tip}')
                continue
            msg = self._wrench_messages.get(tip)
            self._wrench_messages[tip] = msg = effort_outputs.wrench_message(
                F_base, stamp, frame_id, msg)
            self._tips.wrench_estimate_publisher(tip).publish(msg)

    def _reset(self, what, cause, max_gap):
        self._observer.reset()
        self._diagnostics.count('observer_resets')
        self._log.warning(f'{what}: the external-torque observer starts over (stamps must '
                          f'increase by at most efforts.max_stamp_gap = {max_gap:g} s)',
                          cause=f'observer reset {cause}')

    def _set_collision(self, names):
        """Publish the collision signal when it changes; name the joints in the diagnostics."""
        if bool(names) != bool(self._colliding):
            self._collision.publish(Bool(data=bool(names)))
        if names != self._colliding:
            self._diagnostics.collision(names)
        self._colliding = names
