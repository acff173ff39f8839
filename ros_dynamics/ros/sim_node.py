"""``sim_node``: a URDF robot simulated by MuJoCo (:mod:`ros_dynamics.sim.robot`) on ROS topics.

Every 1 ms of simulated time the node publishes ``joint_states`` (positions, velocities, and as
efforts the torques applied) and ``/clock``, serves its inputs until the step's deadline on the
wall clock (``real_time_factor`` sets it), then steps with the latest command. A command arriving
within the step's deadline is applied in that step: one step of latency at most, as a 1 kHz
joint controller has. When the node falls behind its deadlines the simulation slows (it never
skips or bunches steps: simulated time is what ``/clock`` says), counted as ``overruns``. With
``lockstep_timeout``, once commanded it also waits for a command after each state (one step
of latency, whatever the machine's load: what the tests and the demo use), and for a message on
each of ``lockstep_topics`` (the dynamics node's output, so that the node cannot fall behind a
faster controller).

Effort commands are what ros2_control's forward_command_controller takes: a
``std_msgs/Float64MultiArray`` on ``~/commands``, one value per joint of the ``joints``
parameter. A command of the wrong length, or holding NaN, Inf or a magnitude above 1e6, is
refused (counted, throttled error) and the last valid command stays applied, as the forward
command controller keeps its last command when it rejects one: zeroing the torques would drop
the arm. Until the first valid command the joints are held still (``hold_until_command``: a
robot's brakes stay on until its controller runs).

A step in which the state diverges (a command, push or payload far beyond what the robot's
inertia takes: MuJoCo finds the accelerations not finite or huge) is undone rather than let
MuJoCo restart the simulation: the joints are held still for it, the wrench released and the
command zeroed; counted as ``diverged``, logged (throttled) and reported as ERROR on
``/diagnostics`` for 5 s. MuJoCo's own warnings are counted (``mujoco_warnings``) and logged,
throttled, instead of printed and written to ``MUJOCO_LOG.TXT``.

``~/reset`` puts the robot back at its initial positions, at rest, command zero;
``~/reset_simulation`` does so keeping the last command (a simulator's reset leaves the
controllers alone) and takes simulated time back to zero (``/clock`` jumps back, as Gazebo's
``reset_simulation`` makes it).
"""
import math
import sys
import time

from builtin_interfaces.msg import Time as TimeMsg
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from geometry_msgs.msg import WrenchStamped
from rcl_interfaces.msg import SetParametersResult
import rclpy
from rclpy.exceptions import InvalidTopicNameException
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray
from std_srvs.srv import Trigger

from ..engine.exceptions import DynamicsError
from ..sim import SimulationDiverged
from .guard import guarded
from .small_node import Counts, declare, run_node
from .throttled_log import ThrottledLog

#: Seconds the diagnostics stay at ERROR after a step was undone (the simulation diverged).
DIVERGED_ERROR_PERIOD = 5.0
#: Parameters: name -> (default, description with unit).
PARAMETERS = {
    'robot_description': ('', 'URDF text of the robot; empty: urdf_file'),
    'urdf_file': ('', 'Path of the URDF file, used when robot_description is empty'),
    'joints': ([''], 'Joint order of the effort commands (forward_command_controller joints); '
                     'empty: every non-mimic revolute, continuous or prismatic joint, URDF order'),
    'initial_positions': ([0.0], 'Start positions in the order of joints [rad or m]; [0.0]: '
                                 'zero, clamped into the joint limits'),
    'default_damping': (0.5, 'Viscous damping of joints whose <dynamics damping> is absent or '
                             'zero [N m s/rad or N s/m]'),
    'friction': (True, "Model the URDF's <dynamics friction> as dry (Coulomb) joint friction"),
    'urdf_dynamics': (True, "Take the joints' damping (and friction) from the URDF's "
                            '<dynamics>; false: default_damping on every joint, no friction '
                            '(the rigid bodies alone with default_damping 0)'),
    'real_time_factor': (1.0, 'Simulated seconds per wall-clock second (0.01 to 100)'),
    'publish_clock': (True, 'Publish simulated time on /clock (for use_sim_time)'),
    'hold_until_command': (True, 'Hold the joints still until the first valid command'),
    'lockstep_timeout': (0.0, 'Once commanded, wait after each joint state for a command '
                              'before stepping, at most this long on the wall clock [s], as a '
                              'controller running every cycle would (a late command then '
                              'slows the simulation instead of arriving steps late); when none '
                              'comes (counted as lockstep_timeouts) the simulation runs on in '
                              'real time until commands come again; 0: real time, no wait'),
    'lockstep_topics': ([''], 'In lockstep, std_msgs/Float64MultiArray topics that must also '
                              'bring a message after each joint state before the step (the '
                              "dynamics node's gravity_command: a slower node in the loop then "
                              'slows the simulation instead of falling behind it); empty: the '
                              'commands alone'),
    'payload.link': ('', 'Link carrying the payload (run time changeable, with payload.mass '
                         'and payload.com in one change)'),
    'payload.mass': (0.0, 'Payload mass, a point mass [kg]; 0: none'),
    'payload.com': ([0.0, 0.0, 0.0], 'Payload center of mass in the link frame [m]'),
}
READ_ONLY = ('robot_description', 'urdf_file', 'joints', 'initial_positions', 'default_damping',
             'friction', 'urdf_dynamics',
             'real_time_factor', 'publish_clock', 'hold_until_command', 'lockstep_timeout',
             'lockstep_topics')
#: Most lockstep_topics.
MAX_LOCKSTEP_TOPICS = 16
COUNTERS = ('steps', 'overruns', 'commands', 'commands_refused', 'wrenches', 'wrenches_refused',
            'payloads_refused', 'resets', 'callback_errors', 'lockstep_timeouts', 'diverged',
            'mujoco_warnings')


class SimNode:
    """The simulation's node: parameters, publishers, subscriptions, one step at a time."""

    def __init__(self, node):
        self.node = node
        self.log = ThrottledLog(node.get_logger())
        self.counts = Counts({c: 0 for c in COUNTERS})
        # MuJoCo's warnings (else printed and appended to MUJOCO_LOG.TXT, thousands a second
        # when a simulation goes unstable): counted and logged, throttled.
        import mujoco
        mujoco.set_mju_user_warning(self._on_mujoco_warning)
        declare(node, PARAMETERS, READ_ONLY)
        self.robot = self._build_robot()
        self.rate = self._param('real_time_factor')
        if not (math.isfinite(self.rate) and 0.01 <= self.rate <= 100.0):
            raise ValueError(f'real_time_factor: expected 0.01 to 100, got {self.rate!r}')
        self.holding = self._param('hold_until_command')
        self.lockstep = float(self._param('lockstep_timeout'))
        self.commanded = False        # in lockstep: a command came since the last timeout
        if not (math.isfinite(self.lockstep) and 0.0 <= self.lockstep <= 60.0):
            raise ValueError(f'lockstep_timeout: expected 0 to 60 s, got {self.lockstep!r}')
        self.state_pub = node.create_publisher(JointState, 'joint_states', 10)
        self.clock_pub = (node.create_publisher(Clock, '/clock', 10)
                          if self._param('publish_clock') else None)
        self.diag_pub = node.create_publisher(DiagnosticArray, '/diagnostics', 10)
        node.create_subscription(Float64MultiArray, '~/commands',
                                 self._guard(self._on_command, 'commands'), 10)
        #: Messages received per lockstep topic (only their arrival counts).
        self.paces = []
        topics = [t for t in self._param('lockstep_topics') if t]
        if len(topics) > MAX_LOCKSTEP_TOPICS:
            raise ValueError(f'lockstep_topics: at most {MAX_LOCKSTEP_TOPICS}, got {len(topics)}')
        for k, topic in enumerate(topics):
            self.paces.append(0)
            try:
                node.create_subscription(Float64MultiArray, topic, self._pacer(k), 10)
            except InvalidTopicNameException:
                raise ValueError(f'lockstep_topics: {topic[:100]!r} is not a topic name') \
                    from None
        node.create_subscription(WrenchStamped, '~/wrench',
                                 self._guard(self._on_wrench, 'wrench'), 10)
        node.create_service(Trigger, '~/reset', self._guard(
            self._on_reset, 'reset', lambda req, resp, err: _failed(resp, err)))
        node.create_service(Trigger, '~/reset_simulation', self._guard(
            self._on_reset_simulation, 'reset_simulation',
            lambda req, resp, err: _failed(resp, err)))
        node.add_on_set_parameters_callback(self._guard(
            self._on_parameters, 'parameters',
            lambda params, err: SetParametersResult(successful=False, reason=str(err))))
        self._last_diagnostics = 0.0
        self._diverged_at = -math.inf          # monotonic time of the last step undone
        payload = self._param('payload.link')
        if payload:
            self.robot.set_payload(payload, self._param('payload.mass'),
                                   self._param('payload.com'))

    def _on_mujoco_warning(self, text):
        self.counts.count('mujoco_warnings')
        self.log.warning(f'MuJoCo: {text.strip()}', cause='mujoco')

    def _param(self, name):
        return self.node.get_parameter(name).value

    def _guard(self, callback, what, fallback=None):
        return guarded(callback, what, self.log, self.counts, fallback)

    def _build_robot(self):
        text = self._param('robot_description')
        if not text:
            path = self._param('urdf_file')
            if not path:
                raise ValueError('no robot: set robot_description or urdf_file')
            with open(path) as f:
                text = f.read()
        from ..sim.robot import SimulatedRobot
        robot = SimulatedRobot(text, self._param('default_damping'), self._param('friction'),
                               self._param('urdf_dynamics'))
        joints = [j for j in self._param('joints') if j]
        if joints:
            robot.set_command_order(joints)
        start = list(self._param('initial_positions'))
        limits = [robot.limits(name) for name in robot.command_joints]
        if start == [0.0]:
            start = [min(max(0.0, low), high) for low, high in limits]
        robot.set_state(start, robot.command_joints)       # the count and values checked
        outside = [f'{name} {q:g} not in [{low:g}, {high:g}]' for name, q, (low, high)
                   in zip(robot.command_joints, start, limits) if not low <= q <= high]
        if outside:
            raise ValueError(f'initial_positions: outside the joint limits: {outside}')
        self.start = start
        return robot

    # -- inputs -----------------------------------------------------------------------------

    def _pacer(self, k):
        def on_message(_msg):
            self.paces[k] += 1
        return on_message

    def waiting(self, commands, paces):
        """Whether, in lockstep, the step still waits: no command since ``commands`` was the
        count, or a lockstep topic without a message since ``paces``.
        """
        return self.counts['commands'] == commands or any(
            now == before for now, before in zip(self.paces, paces))

    def _on_command(self, msg):
        try:
            self.robot.set_command(msg.data)
        except DynamicsError as e:
            self.counts.count('commands_refused')
            self.log.error(f'command refused, the last one stays applied: {e} (joints: '
                           f'{self.robot.command_joints})', cause='command')
            return
        self.counts.count('commands')
        self.holding = False
        self.commanded = True

    def _on_wrench(self, msg):
        f, t = msg.wrench.force, msg.wrench.torque
        try:
            self.robot.set_wrench(msg.header.frame_id, [f.x, f.y, f.z, t.x, t.y, t.z])
        except DynamicsError as e:
            self.counts.count('wrenches_refused')
            self.log.error(f'wrench refused: {e}', cause='wrench')
            return
        self.counts.count('wrenches')

    def _on_reset(self, request, response):
        self.robot.release_wrench()
        self.robot.set_state(self.start, self.robot.command_joints)
        self.counts.count('resets')
        response.success = True
        response.message = 'at the initial positions, at rest, command zero, no wrench'
        return response

    def _on_reset_simulation(self, request, response):
        # As a simulator's reset leaves the controllers' commands alone: the last one stays.
        command = self.robot.command.copy()
        self._on_reset(request, response)
        self.robot.set_command(command)
        self.robot.restart_time()
        response.message = ('at the initial positions, at rest, no wrench, the last command '
                            'kept; simulated time (/clock) back to zero')
        return response

    def _on_parameters(self, params):
        changes = {p.name: p.value for p in params if p.name.startswith('payload.')}
        if not changes:
            return SetParametersResult(successful=True)
        link = changes.get('payload.link', self._param('payload.link'))
        mass = changes.get('payload.mass', self._param('payload.mass'))
        com = changes.get('payload.com', self._param('payload.com'))
        try:
            if link:
                self.robot.set_payload(link, mass, com)
            else:
                self.robot.remove_payload()
        except DynamicsError as e:
            self.counts.count('payloads_refused')
            return SetParametersResult(successful=False, reason=str(e))
        return SetParametersResult(successful=True)

    # -- the loop ---------------------------------------------------------------------------

    def publish_state(self):
        """``joint_states`` and ``/clock`` at the current simulated time."""
        robot = self.robot
        stamp = _time_msg(robot.time)
        if self.clock_pub is not None:
            self.clock_pub.publish(Clock(clock=stamp))
        msg = JointState()
        msg.header.stamp = stamp
        msg.name = robot.all_joints
        msg.position = robot.positions().tolist()
        msg.velocity = robot.velocities().tolist()
        msg.effort = robot.efforts().tolist()
        self.state_pub.publish(msg)

    def step(self):
        """One simulation step (the joints held still while waiting for a first command); a
        step that diverged is undone (counted, throttled error, diagnostics ERROR for 5 s).
        """
        if self.holding:
            self.robot.hold()
        else:
            try:
                self.robot.step()
            except SimulationDiverged as err:
                self.counts.count('diverged')
                self._diverged_at = time.monotonic()
                self.log.error(str(err), cause='diverged')
        self.counts.count('steps')

    def publish_diagnostics(self):
        """The counters on ``/diagnostics``, at most once a wall-clock second."""
        now = time.monotonic()
        if now - self._last_diagnostics < 1.0:
            return
        self._last_diagnostics = now
        status = DiagnosticStatus(name=f'{self.node.get_fully_qualified_name()}: simulation',
                                  hardware_id='mujoco')
        status.level = DiagnosticStatus.WARN if self.counts['commands_refused'] or \
            self.counts['callback_errors'] else DiagnosticStatus.OK
        status.message = 'holding until the first command' if self.holding else 'running'
        if now - self._diverged_at < DIVERGED_ERROR_PERIOD:
            status.level = DiagnosticStatus.ERROR
            status.message = 'diverging: steps undone (see the log)'
        status.values = [KeyValue(key=k, value=str(v)) for k, v in self.counts.items()]
        status.values.append(KeyValue(key='sim_time', value=f'{self.robot.time:.3f}'))
        self.diag_pub.publish(DiagnosticArray(header=_header(self.robot.time), status=[status]))


def _time_msg(seconds):
    nanoseconds = int(round(seconds * 1e9))
    return TimeMsg(sec=nanoseconds // 1_000_000_000, nanosec=nanoseconds % 1_000_000_000)


def _header(seconds):
    from std_msgs.msg import Header
    return Header(stamp=_time_msg(seconds))


def _failed(response, error):
    response.success = False
    response.message = str(error)[:1000]
    return response


def run(sim, executor):
    """Step, publish, serve inputs until the step's wall-clock deadline (and, in lockstep,
    until a command came), forever.
    """
    from ..sim.robot import TIME_STEP
    period = TIME_STEP / sim.rate
    deadline = time.monotonic()
    while rclpy.ok():
        commands, paces = sim.counts['commands'], list(sim.paces)
        sim.publish_state()
        deadline += period
        executor.spin_once(timeout_sec=0.0)
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0.0:
                break
            executor.spin_once(timeout_sec=remaining)
        if sim.lockstep > 0 and sim.commanded:
            wait_until = time.monotonic() + sim.lockstep
            while sim.waiting(commands, paces) and rclpy.ok():
                remaining = wait_until - time.monotonic()
                if remaining <= 0.0:              # the controller is gone: run on
                    sim.counts.count('lockstep_timeouts')
                    sim.commanded = False
                    break
                executor.spin_once(timeout_sec=remaining)
        if time.monotonic() - deadline > period:       # behind: slow down, never bunch steps
            sim.counts.count('overruns')
            deadline = time.monotonic()
        sim.step()
        sim.publish_diagnostics()


def main(args=None):
    """Run the simulation until SIGINT; returns the exit code (1: it cannot start)."""
    try:
        import mujoco  # noqa: F401  -- a test dependency, not a ROS package: said plainly
    except ImportError:
        print('sim_node needs MuJoCo: pip install mujoco (the simulation is optional; the '
              'dynamics node does not use it)', file=sys.stderr)
        return 1

    def start(node, executor):
        sim = SimNode(node)
        node.get_logger().info(
            f'simulating {len(sim.robot.all_joints)} joints at 1 kHz of simulated time, '
            f'{sim.rate:g} x real time; commands on {node.resolve_topic_name("~/commands")} '
            f'in the order {sim.robot.command_joints}')
        run(sim, executor)

    return run_node('sim', sys.argv if args is None else args, start)


if __name__ == '__main__':
    sys.exit(main())
