"""The ros_dynamics node: gravity torques and frame poses from joint states, live.

Model source (robot_state_publisher's conventions): the ``robot_description`` parameter, else
the ``urdf_file`` parameter, else the ``robot_description`` topic (``std_msgs/String``, reliable,
transient-local, so a node started late still receives it). A description arriving later is
built off to the side and swapped in; an invalid one is refused and the old model keeps serving.

Per joint state: validate, merge into the latest state by name, one kinematics pass, then every
output reads from that pass and is stamped with the joint state's time.

Services ``~/compute_fk`` and ``~/solve_ik`` (ros_dynamics_interfaces) run beside the streaming
path on a companion node with its own executor thread
(:class:`~ros_dynamics.ros.kinematics_services.KinematicsServiceNode`), so a slow IK request
never holds up joint states; each executor is single-threaded, the fastest rclpy offers.
"""
import math
import re
import sys
import threading

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from geometry_msgs.msg import PoseStamped
import numpy as np
from rcl_interfaces.msg import ParameterDescriptor, SetParametersResult
import rclpy
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
from rclpy.node import Node
from rclpy.qos import (
    DurabilityPolicy,
    HistoryPolicy,
    QoSProfile,
    ReliabilityPolicy,
)
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, MultiArrayDimension, String

from ..engine import DynamicsError, RobotModel, kinematics, rnea
from ..engine.spatial import inverse_transform
from .conversions import pose_from_matrix
from .joint_state_merger import InvalidJointState, JointStateMerger
from .kinematics_services import KinematicsServiceNode

#: QoS of the robot_description topic, as robot_state_publisher publishes it.
DESCRIPTION_QOS = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                             durability=DurabilityPolicy.TRANSIENT_LOCAL,
                             history=HistoryPolicy.KEEP_LAST)

#: QoS of joint_states: best effort matches both sensor-data and reliable publishers; a deep
#: history rides out bursts.
JOINT_STATE_QOS = QoSProfile(depth=50, reliability=ReliabilityPolicy.BEST_EFFORT,
                             durability=DurabilityPolicy.VOLATILE,
                             history=HistoryPolicy.KEEP_LAST)

_THROTTLE_S = 5.0


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
        self._command_index = None
        self._pose_pubs = {}
        self.counters = {'joint_states': 0, 'dropped': 0, 'published': 0,
                         'descriptions_refused': 0}

        self._gravity_pub = self.create_publisher(JointState, 'gravity_torques', 10)
        self._command_pub = self.create_publisher(Float64MultiArray, 'gravity_command', 10)
        self._diag_pub = self.create_publisher(DiagnosticArray, '/diagnostics', 10)
        self.create_subscription(JointState, 'joint_states', self._on_joint_state,
                                 JOINT_STATE_QOS)
        self.create_subscription(String, 'robot_description', self._on_description_msg,
                                 DESCRIPTION_QOS)
        self.add_on_set_parameters_callback(self._on_set_parameters)
        self.create_timer(1.0, self._publish_diagnostics)

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
        declare('base_frame', '', 'Frame poses are expressed in; empty: the URDF root link')
        declare('tip_frames', [''], 'Frames whose poses are published; empty: the leaf links')
        declare('command_joints', [''], 'Joint order of the Float64MultiArray effort command '
                '(as the ForwardCommandController joints list); empty: the model order')
        declare('gravity', [0.0, 0.0, -9.81], 'Gravity vector in the root frame [m/s^2]')
        declare('strict_inertia', False, 'Refuse descriptions with physically impossible '
                'inertials instead of warning', True)
        declare('ik.tip_frame', '', 'Default tip frame of ~/solve_ik; empty: the first tip '
                'frame')
        declare('ik.position_tolerance', 1e-5, 'Default position tolerance of ~/solve_ik [m]')
        declare('ik.orientation_tolerance', 1e-5, 'Default orientation tolerance of ~/solve_ik '
                '[rad]')
        declare('ik.timeout', 0.05, 'Default time budget of ~/solve_ik [s]')

    def _string_list(self, name):
        return [s for s in self.get_parameter(name).value if s]

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
        for p in params:
            if p.name == 'gravity':
                g = list(p.value)
                if len(g) != 3 or not all(math.isfinite(x) for x in g):
                    return SetParametersResult(successful=False,
                                               reason='gravity: expected 3 finite values [m/s^2]')
                if self._model is not None:
                    self._model.set_gravity(g)
            elif p.name in ('ik.position_tolerance', 'ik.orientation_tolerance', 'ik.timeout'):
                if not (math.isfinite(p.value) and p.value > 0):
                    return SetParametersResult(successful=False,
                                               reason=f'{p.name}: expected a finite value > 0')
            elif p.name == 'ik.tip_frame' and p.value and self._model is not None and \
                    p.value not in self._model.frame_names:
                return SetParametersResult(successful=False,
                                           reason=f'ik.tip_frame: unknown frame {p.value!r}')
            elif p.name in ('base_frame', 'tip_frames', 'command_joints') and \
                    self._model is not None:
                value = p.value if p.name == 'base_frame' else [s for s in p.value if s]
                problem = self._check_frames_and_joints(self._model, p.name, value)
                if problem:
                    return SetParametersResult(successful=False, reason=problem)
        return SetParametersResult(successful=True)

    # --- model ------------------------------------------------------------------------------

    def _check_frames_and_joints(self, model, name, value):
        if name == 'base_frame' and value and value not in model.frame_names:
            return f'base_frame: unknown frame {value!r}; valid: {list(model.frame_names)}'
        if name == 'tip_frames':
            bad = [f for f in value if f not in model.frame_names]
            if bad:
                return f'tip_frames: unknown frames {bad}; valid: {list(model.frame_names)}'
        if name == 'command_joints':
            bad = [j for j in value if j not in model.joint_names]
            if bad:
                return f'command_joints: unknown joints {bad}; valid: {list(model.joint_names)}'
        return None

    def _on_description_msg(self, msg):
        self.load_description(msg.data, 'the robot_description topic')

    def load_description(self, xml, source):
        """Build a model from URDF text and swap it in; on failure keep the old one."""
        try:
            model = RobotModel.from_urdf_string(
                xml, strict=self.get_parameter('strict_inertia').value)
            model.set_gravity(self.get_parameter('gravity').value)
        except DynamicsError as err:
            self.counters['descriptions_refused'] += 1
            self.get_logger().error(f'refused the robot description from {source}: {err}'
                                    + ('; the previous model keeps serving'
                                       if self._model is not None else ''))
            return False
        for note in model.warnings:
            self.get_logger().warning(f'robot description: {note}')
        tips = self._string_list('tip_frames') or _leaf_frames(model)
        base = self.get_parameter('base_frame').value
        command = self._string_list('command_joints') or list(model.joint_names)
        for name, value in (('tip_frames', tips), ('base_frame', base),
                            ('command_joints', command)):
            problem = self._check_frames_and_joints(model, name, value)
            if problem:
                self.counters['descriptions_refused'] += 1
                self.get_logger().error(f'refused the robot description from {source}: {problem}')
                return False
        merger = JointStateMerger(model.joint_names, model.mimic_joint_names)
        with self._lock:
            self._model = model
            self._merger = merger
            self._tips = tuple(tips)
            self._base = base or model.root_frame
            self._command_index = np.array([model.joint_index(j) for j in command], dtype=int)
            for tip in tips:
                if tip not in self._pose_pubs:
                    self._pose_pubs[tip] = self.create_publisher(
                        PoseStamped, f'poses/{topic_token(tip)}', 10)
        self.get_logger().info(f'model {model.name!r} from {source}: {model.nq} joints, '
                               f'{len(model.frame_names)} frames, tips {list(tips)}')
        return True

    # --- streaming path -----------------------------------------------------------------------

    def _on_joint_state(self, msg):
        self.counters['joint_states'] += 1
        with self._lock:
            model, merger, tips, base = self._model, self._merger, self._tips, self._base
            command_index = self._command_index
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
        state = kinematics.forward_kinematics(model, merger.q)
        tau = rnea.gravity_torques(model, state)
        stamp = msg.header.stamp

        out = JointState()
        out.header.stamp = stamp
        out.name = list(model.joint_names)
        out.effort = tau.tolist()
        self._gravity_pub.publish(out)
        self._command_pub.publish(_float_array(tau[command_index], 'joints'))

        T_world_base = state.frame_pose(base)
        T_base_world = inverse_transform(T_world_base)
        for tip in tips:
            pose = PoseStamped()
            pose.header.stamp = stamp
            pose.header.frame_id = base
            pose_from_matrix(T_base_world @ state.frame_pose(tip), pose.pose)
            self._pose_pubs[tip].publish(pose)
        self.counters['published'] += 1

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

    def _publish_diagnostics(self):
        status = DiagnosticStatus()
        status.name = f'{self.get_name()}: dynamics'
        status.hardware_id = self._model.name if self._model is not None else ''
        if self._model is None:
            status.level = DiagnosticStatus.WARN
            status.message = 'no robot model loaded'
        elif self.counters['dropped']:
            status.level = DiagnosticStatus.WARN
            status.message = 'invalid joint states dropped'
        else:
            status.level = DiagnosticStatus.OK
            status.message = 'ok'
        status.values = [KeyValue(key=k, value=str(v)) for k, v in self.counters.items()]
        array = DiagnosticArray()
        array.header.stamp = self.get_clock().now().to_msg()
        array.status = [status]
        self._diag_pub.publish(array)


def _leaf_frames(model):
    """Frames no other frame hangs from (the end effectors of a tree)."""
    parents = set(model.frame_parent.values())
    return [f for f in model.frame_names if f not in parents]


def _float_array(values, label):
    msg = Float64MultiArray()
    msg.layout.dim = [MultiArrayDimension(label=label, size=len(values), stride=len(values))]
    msg.data = [float(v) for v in values]
    return msg


def main(args=None):
    """Entry point of ``ros2 run ros_dynamics dynamics_node``."""
    rclpy.init(args=args)
    # Let the streaming callbacks take the interpreter back quickly while an IK solve runs.
    sys.setswitchinterval(0.0005)
    node = services = service_thread = None
    executors = []
    try:
        node = DynamicsNode()
        services = KinematicsServiceNode(node)
        streaming = SingleThreadedExecutor()
        streaming.add_node(node)
        executors.append(streaming)
        if services.available:
            service_executor = SingleThreadedExecutor()
            service_executor.add_node(services)
            executors.append(service_executor)
            service_thread = threading.Thread(target=_spin_until_shutdown,
                                              args=(service_executor,),
                                              name='ros_dynamics_services')
            service_thread.start()
        _spin_until_shutdown(streaming)
    except KeyboardInterrupt:
        pass
    finally:
        # Stop both executors and wait for the service thread before destroying anything it
        # may still be waiting on.
        for executor in executors:
            executor.shutdown(timeout_sec=1.0)
        if service_thread is not None:
            service_thread.join(timeout=5.0)
        for n in (services, node):
            if n is not None:
                n.destroy_node()
        rclpy.try_shutdown()


def _spin_until_shutdown(executor):
    """Spin; errors raised because the context is shutting down (Ctrl-C) end the spin."""
    try:
        executor.spin()
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    except Exception:
        if rclpy.ok():
            raise


if __name__ == '__main__':
    main()
