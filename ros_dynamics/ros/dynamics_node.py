"""The ros_dynamics node: gravity and feedforward torques, tip poses, twists and Jacobians, live.

Model source (robot_state_publisher's conventions): the ``robot_description`` parameter, else
the ``urdf_file`` parameter, else the ``robot_description`` topic (``std_msgs/String``, reliable,
transient-local, so a node started late still receives it). A description arriving later is
built off to the side and swapped in; an invalid one is refused and the old model keeps serving.

Per joint state (or at ``publish_rate``): validate, merge into the latest state by name, one
kinematics pass, then every output reads from that pass and is stamped with the joint state's
time. Services ``~/compute_fk`` and ``~/solve_ik`` run on a companion node with its own executor
thread (:class:`~ros_dynamics.ros.kinematics_services.KinematicsServiceNode`), so a slow IK
request never holds up joint states; each executor is single-threaded, the fastest rclpy offers.
"""
import faulthandler
import gc
import math
import re
import signal
import sys
import threading
import time
import traceback

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from geometry_msgs.msg import PoseStamped, TwistStamped, WrenchStamped
import numpy as np
from rcl_interfaces.msg import ParameterDescriptor, SetParametersResult
import rclpy
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from rclpy.signals import SignalHandlerOptions
from rclpy.time import Time
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, MultiArrayDimension, String
from trajectory_msgs.msg import JointTrajectory
from visualization_msgs.msg import MarkerArray

from ..engine import DynamicsError, Payload, RobotModel, jacobians, kinematics, rnea
from ..engine.spatial import inverse_transform
from . import markers
from .conversions import pose_from_matrix, vector6_to_twist, wrench_to_vector6
from .joint_state_merger import InvalidJointState, JointStateMerger
from .kinematics_services import KinematicsServiceNode
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
OUTPUTS = ('gravity', 'poses', 'twists', 'jacobians', 'feedforward', 'markers')


def topic_token(frame):
    """A frame name made safe as one token of a ROS topic name."""
    token = re.sub(r'[^A-Za-z0-9_]', '_', frame)
    return token if token and not token[0].isdigit() else 'f_' + token


class DynamicsNode(Node):
    """Wraps one :class:`~ros_dynamics.engine.RobotModel`; see the module docstring."""

    def __init__(self, **kwargs):
        super().__init__('ros_dynamics', **kwargs)
        self._declare_parameters()
        self._lock = threading.Lock()
        self._model = None
        self._merger = None
        self._tips = ()
        self._base = ''
        self._base_fixed = True
        self._command_index = None
        self._tip_pubs = {}
        self._wrenches = {}          # tip -> (frame_id, wrench (6,))
        self._trajectory = None      # (Trajectory, start Time, index in q of its joints)
        self._last_markers = 0.0
        self._last_stamp = None
        self.counters = {'joint_states': 0, 'dropped': 0, 'published': 0,
                         'trajectories': 0, 'trajectories_rejected': 0,
                         'descriptions_refused': 0, 'wrenches_rejected': 0,
                         'stamps_backwards': 0}
        self._compute_times = []
        self._templates = None      # (model, frames and command joints, output messages)
        self._settings = {}          # output switches, friction, markers rate (hot path cache)
        self._refresh_settings()

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
        self.create_timer(1.0, self._publish_diagnostics)
        self._publish_rate = self.get_parameter('publish_rate').value   # read-only
        if self._publish_rate > 0:
            self.create_timer(1.0 / self._publish_rate, self._on_rate_timer)

        xml, source = self._initial_description()
        if xml is not None:
            if not self.load_description(xml, source):
                raise SystemExit(f'ros_dynamics: the robot description from {source} is invalid')
        else:
            self.get_logger().info('waiting for a robot description on the robot_description '
                                   'topic')

    # --- parameters ---------------------------------------------------------------------------

    def _declare_parameters(self):
        def declare(name, default, description, read_only=False):
            self.declare_parameter(name, default, ParameterDescriptor(
                description=description, read_only=read_only))

        declare('robot_description', '', 'URDF text of the robot (as robot_state_publisher '
                'takes it); empty: use urdf_file, else the robot_description topic', True)
        declare('urdf_file', '', 'Path of a URDF file, used when robot_description is empty',
                True)
        declare('base_frame', '', 'Frame poses, twists and Jacobians are expressed in; empty: '
                'the URDF root link')
        declare('tip_frames', [''], 'Frames whose poses (and twists, Jacobians, wrenches) are '
                'handled; empty: the leaf links')
        declare('command_joints', [''], 'Joint order of the Float64MultiArray effort commands '
                '(as the ForwardCommandController joints list); empty: the model order')
        declare('gravity', [0.0, 0.0, -9.81], 'Gravity vector in the root frame [m/s^2]')
        declare('publish_rate', 0.0, 'Output rate [Hz]; 0: on every joint state', True)
        for output in OUTPUTS:
            declare(f'publish.{output}', True, f'Publish the {output} outputs')
        declare('markers_rate', 10.0, 'Highest rate of the rviz markers [Hz]')
        declare('friction', False, 'Add URDF <dynamics> viscous damping and Coulomb friction to '
                'the feedforward torques')
        declare('rotor_inertia.joints', [''], 'Joints with rotor (armature) inertia')
        declare('rotor_inertia.values', [0.0], 'Rotor inertia of those joints [kg m^2], '
                'motor side when gear_ratios are given')
        declare('rotor_inertia.gear_ratios', [0.0], 'Gear ratios N of those joints (reflected '
                'inertia J_m N^2); [0.0]: the values are already reflected')
        declare('payload.frame', '', 'Frame the payload is fixed to; empty: no payload')
        declare('payload.mass', 0.0, 'Payload mass [kg]')
        declare('payload.com', [0.0, 0.0, 0.0], 'Payload center of mass in its frame [m]')
        declare('payload.inertia', [0.0] * 6, 'Payload inertia about its center of mass, '
                'ixx ixy ixz iyy iyz izz [kg m^2]')
        declare('strict_inertia', False, 'Refuse descriptions with physically impossible '
                'inertials instead of warning', True)
        declare('ik.tip_frame', '', 'Default tip frame of ~/solve_ik; empty: the first tip '
                'frame')
        declare('ik.position_tolerance', 1e-5, 'Default position tolerance of ~/solve_ik [m]')
        declare('ik.orientation_tolerance', 1e-5, 'Default orientation tolerance of ~/solve_ik '
                '[rad]')
        declare('ik.timeout', 0.05, 'Default time budget of ~/solve_ik [s]')
        declare('ik.seed_samples', 20000, 'Configurations sampled once per IK tip frame to start '
                'solves near their targets (the default tip at startup, others after their '
                'first request); 0: random starts only', True)

    def _refresh_settings(self, overrides=None):
        """Cache the values the streaming path reads on every message."""
        names = [f'publish.{o}' for o in OUTPUTS] + ['friction', 'markers_rate']
        self._settings = {n: self._value(n, overrides) for n in names}

    def _value(self, name, overrides=None):
        if overrides and name in overrides:
            return overrides[name]
        return self.get_parameter(name).value

    def _string_list(self, name, overrides=None):
        return [s for s in self._value(name, overrides) if s]

    def _initial_description(self):
        xml = self.get_parameter('robot_description').value
        if xml:
            return xml, 'the robot_description parameter'
        path = self.get_parameter('urdf_file').value
        if path:
            try:
                with open(path, encoding='utf-8') as f:
                    return f.read(), f'urdf_file {path!r}'
            except OSError as err:
                raise SystemExit(f'ros_dynamics: cannot read urdf_file {path!r}: {err}') from None
        return None, None

    def _on_set_parameters(self, params):
        new = {p.name: p.value for p in params}
        for name, value in new.items():
            if name == 'gravity':
                if len(value) != 3 or not all(math.isfinite(x) for x in value):
                    return _refuse('gravity: expected 3 finite values [m/s^2]')
            elif name in ('ik.position_tolerance', 'ik.orientation_tolerance', 'ik.timeout',
                          'markers_rate'):
                if not (math.isfinite(value) and value > 0):
                    return _refuse(f'{name}: expected a finite value > 0')
        model = self._model
        if model is not None:
            try:
                self._configure(model, new)
            except ValueError as err:
                return _refuse(str(err))
        self._refresh_settings(new)
        return SetParametersResult(successful=True)

    # --- model ------------------------------------------------------------------------------

    def _configure(self, model, overrides=None):
        """Validate the frame/joint/dynamics parameters against ``model`` and apply them.

        Raises ValueError with a reason; nothing is applied then.
        """
        tips = self._string_list('tip_frames', overrides) or list(model.leaf_frames)
        base = self._value('base_frame', overrides) or model.root_link
        command = self._string_list('command_joints', overrides) or list(model.joint_names)
        ik_tip = self._value('ik.tip_frame', overrides)
        for label, frames in (('tip_frames', tips), ('base_frame', [base]),
                              ('ik.tip_frame', [ik_tip] if ik_tip else [])):
            bad = [f for f in frames if f not in model.frame_names]
            if bad:
                raise ValueError(f'{label}: unknown frames {bad}; valid: {list(model.frame_names)}')
        bad = [j for j in command if j not in model.joint_names]
        if bad:
            raise ValueError(f'command_joints: unknown joints {bad}; valid: '
                             f'{list(model.joint_names)}')
        rotor = self._rotor_inertia(model, overrides)
        payload = self._payload(model, overrides)
        try:
            settings = model.make_settings(gravity=self._value('gravity', overrides),
                                           rotor_inertia=rotor,
                                           payloads=[Payload(*payload)] if payload else [])
        except DynamicsError as err:
            raise ValueError(str(err)) from None
        # Everything is valid: apply, the dynamic settings in one assignment.
        model.settings = settings
        with self._lock:
            self._tips = tuple(tips)
            self._base = base
            # A base fixed to the root: twists are J qd and Jacobians are those of the tips.
            self._base_fixed = bool(model.frame_body[model.frame_index(base)] == 0)
            self._command_index = np.array([model.joint_index(j) for j in command], dtype=int)
            for tip in tips:
                if tip not in self._tip_pubs:
                    token = topic_token(tip)
                    self._tip_pubs[tip] = (
                        self.create_publisher(PoseStamped, f'poses/{token}', 10),
                        self.create_publisher(TwistStamped, f'twists/{token}', 10),
                        self.create_publisher(Float64MultiArray, f'jacobians/{token}', 10),
                        self.create_subscription(WrenchStamped, f'wrenches/{token}',
                                                 lambda m, t=tip: self._on_wrench(t, m), 10))

    def _rotor_inertia(self, model, overrides):
        joints = self._string_list('rotor_inertia.joints', overrides)
        values = list(self._value('rotor_inertia.values', overrides))
        ratios = list(self._value('rotor_inertia.gear_ratios', overrides))
        if not joints:
            return np.zeros(model.nq)
        if len(values) != len(joints) or (ratios != [0.0] and len(ratios) != len(joints)):
            raise ValueError('rotor_inertia: joints, values (and gear_ratios) need one entry '
                             f'per joint, got {len(joints)}, {len(values)}, {len(ratios)}')
        out = np.zeros(model.nq)
        for k, joint in enumerate(joints):
            if joint not in model.joint_names:
                raise ValueError(f'rotor_inertia.joints: unknown joint {joint!r}')
            n = ratios[k] if ratios != [0.0] else 1.0
            value = values[k] * n * n
            if not (math.isfinite(value) and value >= 0):
                raise ValueError(f'rotor_inertia: value of {joint!r} must be finite and >= 0')
            out[model.joint_index(joint)] = value
        return out

    def _payload(self, model, overrides):
        frame = self._value('payload.frame', overrides)
        mass = self._value('payload.mass', overrides)
        if not frame or mass == 0:
            return None
        if frame not in model.frame_names:
            raise ValueError(f'payload.frame: unknown frame {frame!r}')
        com = list(self._value('payload.com', overrides))
        i = list(self._value('payload.inertia', overrides))
        if len(com) != 3 or len(i) != 6:
            raise ValueError('payload: com needs 3 values and inertia 6 (ixx ixy ixz iyy iyz izz)')
        values = [mass] + com + i
        if not all(math.isfinite(v) for v in values) or mass < 0:
            raise ValueError('payload: mass must be >= 0 and every value finite')
        inertia = np.array([[i[0], i[1], i[2]], [i[1], i[3], i[4]], [i[2], i[4], i[5]]])
        return frame, mass, np.array(com), inertia

    def _on_description_msg(self, msg):
        self.load_description(msg.data, 'the robot_description topic')

    def load_description(self, xml, source):
        """Build a model from URDF text and swap it in; on failure keep the old one."""
        try:
            model = RobotModel.from_urdf_string(
                xml, strict=self.get_parameter('strict_inertia').value)
            self._configure(model)
        except (DynamicsError, ValueError) as err:
            self.counters['descriptions_refused'] += 1
            self.get_logger().error(f'refused the robot description from {source}: {err}'
                                    + ('; the previous model keeps serving'
                                       if self._model is not None else ''))
            return False
        for note in model.warnings:
            self.get_logger().warning(f'robot description: {note}')
        merger = JointStateMerger(model.joint_names, model.mimic_joint_names)
        with self._lock:
            self._model = model
            self._merger = merger
            self._trajectory = None
        self.get_logger().info(f'model {model.name!r} from {source}: {model.nq} joints, '
                               f'{len(model.frame_names)} frames, tips {list(self._tips)}')
        return True

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
        self.counters['joint_states'] += 1
        with self._lock:
            model, merger = self._model, self._merger
        if model is None:
            self.get_logger().warning('joint states received but no robot model is loaded yet',
                                      throttle_duration_sec=_THROTTLE_S)
            return
        try:
            unknown = merger.update(msg.name, msg.position, msg.velocity)
        except InvalidJointState as err:
            self.counters['dropped'] += 1
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
            self.counters['stamps_backwards'] += 1
            self.get_logger().warning('joint state timestamps went backwards',
                                      throttle_duration_sec=_THROTTLE_S)
        self._last_stamp = stamp
        if self._publish_rate <= 0:
            self._compute_and_publish(model, merger.q.copy(), merger.qd.copy(), msg.header.stamp)

    def _on_rate_timer(self):
        with self._lock:
            model, merger = self._model, self._merger
        if model is not None and merger.complete:
            self._compute_and_publish(model, merger.q.copy(), merger.qd.copy(),
                                      self.get_clock().now().to_msg())

    def _on_wrench(self, tip, msg):
        w = wrench_to_vector6(msg.wrench)
        model = self._model
        frame = msg.header.frame_id or tip
        if not np.all(np.isfinite(w)) or (model is not None and frame not in model.frame_names):
            self.counters['wrenches_rejected'] += 1
            self.get_logger().warning(f'rejected a wrench for {tip!r}: NaN/Inf or unknown frame '
                                      f'{frame!r}', throttle_duration_sec=_THROTTLE_S)
            return
        with self._lock:
            if np.any(w):
                self._wrenches[tip] = (frame, w)
            else:
                self._wrenches.pop(tip, None)

    def _on_trajectory(self, msg):
        with self._lock:
            model, merger = self._model, self._merger
        if model is None:
            self.get_logger().warning('trajectory received but no robot model is loaded yet',
                                      throttle_duration_sec=_THROTTLE_S)
            return
        try:
            traj = from_message(msg, model.joint_names)
        except InvalidTrajectory as err:
            self.counters['trajectories_rejected'] += 1
            self.get_logger().warning(f'rejected a trajectory: {err}',
                                      throttle_duration_sec=_THROTTLE_S)
            return
        index = np.array([model.joint_index(j) for j in traj.joint_names], dtype=int)
        base = merger.q.copy() if merger.complete else model.middle_configuration()
        q = np.repeat(base[None, :], len(traj.times), axis=0)
        qd = np.zeros_like(q)
        qdd = np.zeros_like(q)
        q[:, index], qd[:, index], qdd[:, index] = \
            traj.positions, traj.velocities, traj.accelerations
        tau = model.inverse_dynamics(q, qd, qdd, friction=self.get_parameter('friction').value)
        out = JointTrajectory()
        out.header = msg.header
        out.joint_names = list(traj.joint_names)
        out.points = list(msg.points)
        for point, effort in zip(out.points, tau[:, index]):
            point.effort = effort.tolist()
        self._ff_traj_pub.publish(out)
        stamp = Time.from_msg(msg.header.stamp)
        start = stamp if stamp.nanoseconds > 0 else self.get_clock().now()
        with self._lock:
            self._trajectory = (traj, start, index)
        self.counters['trajectories'] += 1

    # --- outputs ------------------------------------------------------------------------------

    def _compute_and_publish(self, model, q, qd, stamp):
        started = time.perf_counter()
        with self._lock:
            tips, base, command_index = self._tips, self._base, self._command_index
            base_fixed = self._base_fixed
            wrenches = dict(self._wrenches)
            trajectory = self._trajectory
        settings = self._settings
        on = {o: settings[f'publish.{o}'] for o in OUTPUTS}
        # With the base fixed to the root, twists are J qd: no body velocities needed.
        state = kinematics.forward_kinematics(model, q, None if base_fixed else qd, check=False)
        jacobian = {}           # tip -> world-aligned Jacobian, computed once per message
        out = self._messages(model, tips, base, command_index)

        def tip_jacobian(tip):
            if tip not in jacobian:
                jacobian[tip] = jacobians.frame_jacobian(state, tip, 'local_world_aligned')
            return jacobian[tip]

        tau_g = rnea.gravity_torques(model, state)
        for tip, (frame, w) in wrenches.items():
            if tip in tips:
                R = state.frame_pose(frame)[:3, :3]
                world = np.concatenate([R @ w[:3], R @ w[3:]])
                tau_g = tau_g + tip_jacobian(tip).T @ world
        if on['gravity']:
            msg = out['gravity']
            msg.header.stamp = stamp
            msg.effort = tau_g.tolist()
            self._gravity_pub.publish(msg)
            msg = out['command']
            msg.data = tau_g[command_index].tolist()
            self._command_pub.publish(msg)
        T_world_base = state.frame_pose(base)
        R_base = T_world_base[:3, :3]
        T_base_world = inverse_transform(T_world_base)
        for tip in tips:
            pose_pub, twist_pub, jac_pub, _ = self._tip_pubs[tip]
            pose, twist, jac = out[tip]
            if on['poses']:
                pose.header.stamp = stamp
                pose_from_matrix(T_base_world @ state.frame_pose(tip), pose.pose)
                pose_pub.publish(pose)
            J = None
            if on['jacobians'] or (on['twists'] and base_fixed):
                J = tip_jacobian(tip)
                J = np.vstack([R_base.T @ J[:3], R_base.T @ J[3:]])
            if on['twists']:
                # A base fixed to the root: the twist is J qd; a moving base: relative motion.
                vw = J @ qd if base_fixed else np.concatenate(
                    kinematics.relative_twist(state, tip, base, base, base))
                twist.header.stamp = stamp
                vector6_to_twist(vw, twist.twist)
                twist_pub.publish(twist)
            if on['jacobians']:
                jac.data = J.ravel().tolist()
                jac_pub.publish(jac)
        if on['feedforward'] and trajectory is not None:
            self._publish_feedforward(model, q, trajectory, command_index)
        if on['markers']:
            self._publish_markers(model, state, tips, base, T_base_world, tau_g, stamp,
                                  tip_jacobian)
        self.counters['published'] += 1
        self._compute_times.append(time.perf_counter() - started)

    def _messages(self, model, tips, base, command_index):
        """Output messages of the hot path, built once per model and frames and refilled for
        every joint state (publishing serialises a message, so it can be reused at once).
        """
        key = (model, tips, base, tuple(command_index))
        if self._templates is None or self._templates[0] != key:
            gravity = JointState(name=list(model.joint_names))
            command = _float_array([0.0] * len(command_index), 'joints')
            out = {'gravity': gravity, 'command': command}
            for tip in tips:
                pose, twist = PoseStamped(), TwistStamped()
                pose.header.frame_id = twist.header.frame_id = base
                jac = _jacobian_array(np.zeros((6, model.nq)), model.joint_names, base)
                out[tip] = (pose, twist, jac)
            self._templates = (key, out)
        return self._templates[1]

    def _publish_feedforward(self, model, q, trajectory, command_index):
        traj, start, index = trajectory
        t = (self.get_clock().now() - start).nanoseconds * 1e-9
        if t > traj.duration:
            with self._lock:
                if self._trajectory is trajectory:
                    self._trajectory = None
            return
        qt, qdt, qddt = traj.sample(t)
        q_ff, qd_ff, qdd_ff = q.copy(), np.zeros(model.nq), np.zeros(model.nq)
        q_ff[index], qd_ff[index], qdd_ff[index] = qt, qdt, qddt
        tau = model.inverse_dynamics(q_ff, qd_ff, qdd_ff, friction=self._settings['friction'])
        self._ff_pub.publish(_float_array(tau[command_index], 'joints'))

    def _publish_markers(self, model, state, tips, base, T_base_world, tau_g, stamp,
                         tip_jacobian):
        now = time.monotonic()
        if now - self._last_markers < 1.0 / self._settings['markers_rate']:
            return
        self._last_markers = now
        R, p = T_base_world[:3, :3], T_base_world[:3, 3]
        ellipsoids = []
        for tip in tips:
            axes, lengths = markers.manipulability_ellipsoid(R @ tip_jacobian(tip)[:3])
            ellipsoids.append(((T_base_world @ state.frame_pose(tip))[:3, 3], axes, lengths))
        z, origins = state.joint_axes_world
        independent = [model.moving_joint_names.index(n) for n in model.joint_names]
        com = R @ rnea.center_of_mass(model, state) + p if model.total_mass > 0 else p
        self._marker_pub.publish(markers.build(
            base, stamp, com, tips, ellipsoids, (origins[independent] @ R.T) + p,
            z[independent] @ R.T, tau_g, model.effort_limits))

    def _publish_diagnostics(self):
        status = DiagnosticStatus()
        status.name = f'{self.get_name()}: dynamics'
        status.hardware_id = self._model.name if self._model is not None else ''
        if self._model is None:
            status.level = DiagnosticStatus.WARN
            status.message = 'no robot model loaded'
        elif self.counters['dropped'] or self.counters['trajectories_rejected']:
            status.level = DiagnosticStatus.WARN
            status.message = 'invalid inputs dropped'
        else:
            status.level = DiagnosticStatus.OK
            status.message = 'ok'
        times, self._compute_times = self._compute_times, []
        values = dict(self.counters)
        values['outputs_per_second'] = len(times)
        if times:
            values['compute_time_median_ms'] = f'{1e3 * float(np.median(times)):.3f}'
            values['compute_time_max_ms'] = f'{1e3 * float(np.max(times)):.3f}'
        status.values = [KeyValue(key=k, value=str(v)) for k, v in values.items()]
        array = DiagnosticArray()
        array.header.stamp = self.get_clock().now().to_msg()
        array.status = [status]
        self._diag_pub.publish(array)

    # --- state shared with the service node ---------------------------------------------------

    def latest_q(self):
        """Latest complete joint positions (nq,), or None before every joint was heard of."""
        with self._lock:
            merger = self._merger
        return merger.q.copy() if merger is not None and merger.complete else None

    @property
    def model(self):
        """The model currently serving (swapped atomically), or None."""
        return self._model

    @property
    def tips(self):
        """Tip frames of the current model."""
        return self._tips


def _refuse(reason):
    return SetParametersResult(successful=False, reason=reason)


def _float_array(values, label):
    msg = Float64MultiArray()
    msg.layout.dim = [MultiArrayDimension(label=label, size=len(values), stride=len(values))]
    msg.data = [float(v) for v in values]
    return msg


def _jacobian_array(J, joint_names, base):
    """6 x n Jacobian, row-major; rows vx vy vz wx wy wz in ``base`` axes, columns joints."""
    n = J.shape[1]
    msg = Float64MultiArray()
    msg.layout.dim = [
        MultiArrayDimension(label=f'rows:vx,vy,vz,wx,wy,wz@{base}', size=6, stride=6 * n),
        MultiArrayDimension(label='cols:' + ','.join(joint_names), size=n, stride=n)]
    msg.data = J.ravel().tolist()
    return msg


def main(args=None):
    """Entry point of ``ros2 run ros_dynamics dynamics_node``.

    Shutdown is ordered: SIGINT/SIGTERM set an event the main thread waits on; it then stops
    both executors, joins their threads, destroys the nodes and only then shuts rclpy down
    (rclpy's own handlers would shut the context down under a spinning executor thread).
    """
    faulthandler.enable()      # a crash in native code prints the Python stack
    rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    # Let the streaming callbacks take the interpreter back quickly while an IK solve runs.
    sys.setswitchinterval(0.0005)
    nodes, executors, threads = [], [], []
    code = 0
    try:
        node = DynamicsNode()
        nodes.append(node)
        services = KinematicsServiceNode(node)
        nodes.insert(0, services)
        # What lives for the whole run (model, messages, modules) leaves the garbage
        # collector's generations, so its full passes stay short beside 1 kHz callbacks.
        gc.collect()
        gc.freeze()
        for n in (node, services) if services.available else (node,):
            executor = SingleThreadedExecutor()
            executor.add_node(n)
            executors.append(executor)
            thread = threading.Thread(target=_spin, args=(executor, stop), daemon=True,
                                      name=f'spin_{n.get_name()}')
            threads.append(thread)
            thread.start()
        while not stop.wait(0.5):
            pass
    except SystemExit as err:
        print(err, file=sys.stderr)
        code = 1
    finally:
        for executor in executors:
            executor.shutdown(timeout_sec=1.0)
        for thread in threads:
            thread.join(timeout=5.0)
        for n in nodes:
            n.destroy_node()
        rclpy.try_shutdown()
    return code


def _spin(executor, stop):
    """Spin until shut down; an error ends the process (through ``stop``)."""
    try:
        executor.spin()
    except ExternalShutdownException:
        pass
    except Exception:
        traceback.print_exc()
    finally:
        stop.set()


if __name__ == '__main__':
    sys.exit(main())
