"""``effort_controller``: a joint-space PD + feedforward effort controller, beside the robot.

Per joint state (``joint_states``, the joints of ``joints``): the desired positions and
velocities ``q_d, qd_d`` sampled from the trajectory playing (``joint_trajectory``, sampled as
joint_trajectory_controller samples it: linear, cubic or quintic segments from the points'
fields, started at its header stamp or, when zero, on receipt; before a trajectory and after its
end: the last desired positions held, at first the first state heard), then

    tau = Kp (q_d - q) + Kd (qd_d - qd) + tau_ff

published on ``commands`` (``std_msgs/Float64MultiArray`` in ``joints`` order: remap to a forward
command controller's ``~/commands``). ``tau_ff`` is the latest ``feedforward`` message if it is
fresh (younger than ``feedforward_timeout`` by the node's clock), else the newer of the latest
``feedforward`` and ``gravity`` messages, the feedforward when they came at the same time (both
``std_msgs/Float64MultiArray`` in ``joints`` order),
counted as ``feedforward_late``: never zero once one has come (dropping the torques that hold an arm
up would drop the arm, as a forward command controller keeps its last command); zero before any.
Remap ``feedforward`` to the dynamics node's ``feedforward_command`` (published while a trajectory
plays) and ``gravity`` to its ``gravity_command`` (published for every state) for PD + feedforward,
holding the arm against gravity between trajectories; leave ``feedforward`` unconnected for the PD +
gravity baseline.
Times are the node's clock (``use_sim_time`` with a simulation).
"""
import math
import sys

import numpy as np
from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy
from rclpy.time import Time
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray
from trajectory_msgs.msg import JointTrajectory

from .guard import guarded
from .small_node import Counts, declare, run_node
from .throttled_log import ThrottledLog
from .trajectory_feedforward import InvalidTrajectory, from_message

#: Most joints the controller takes; largest gain accepted.
MAX_JOINTS, MAX_GAIN = 10_000, 1e9

PARAMETERS = {
    'joints': ([''], 'Joints controlled, the order of commands and feedforward'),
    'kp': ([0.0], 'Proportional gains, one per joint or one for all [N m/rad]'),
    'kd': ([0.0], 'Derivative gains, one per joint or one for all [N m s/rad]'),
    'feedforward_timeout': (0.01, 'Age of the latest feedforward beyond which it is not used '
                                  '[s]'),
}


class EffortController:
    """Parameters, subscriptions, the control law on each joint state."""

    def __init__(self, node):
        self.node = node
        self.log = ThrottledLog(node.get_logger())
        self.counts = Counts()
        declare(node, PARAMETERS, read_only=PARAMETERS)
        self.joints = [j for j in node.get_parameter('joints').value if j]
        if not self.joints or len(set(self.joints)) != len(self.joints) or \
                len(self.joints) > MAX_JOINTS:
            raise ValueError(f'joints: expected distinct joint names, got {self.joints}')
        self.kp = self._gains('kp')
        self.kd = self._gains('kd')
        self.ff_timeout = float(node.get_parameter('feedforward_timeout').value)
        if not (math.isfinite(self.ff_timeout) and self.ff_timeout >= 0):
            raise ValueError(f'feedforward_timeout: expected >= 0, got {self.ff_timeout}')
        self.q_hold = None            # (n,) desired positions outside a trajectory
        self.trajectory = None        # (Trajectory, start Time)
        self.latest = {}              # 'feedforward' / 'gravity' -> (tau (n,), Time)
        self.pub = node.create_publisher(Float64MultiArray, 'commands', 10)
        state_qos = QoSProfile(depth=1, reliability=ReliabilityPolicy.BEST_EFFORT,
                               history=HistoryPolicy.KEEP_LAST)
        node.create_subscription(JointState, 'joint_states',
                                 self._guard(self._on_state, 'joint_states'), state_qos)
        node.create_subscription(JointTrajectory, 'joint_trajectory',
                                 self._guard(self._on_trajectory, 'joint_trajectory'), 10)
        for topic in ('feedforward', 'gravity'):
            node.create_subscription(
                Float64MultiArray, topic,
                self._guard(lambda msg, topic=topic: self._on_torques(topic, msg), topic), 10)

    def _guard(self, callback, what):
        return guarded(callback, what, self.log, self.counts)

    def _gains(self, name):
        values = np.array(self.node.get_parameter(name).value, dtype=float)
        if values.size == 1:
            values = np.full(len(self.joints), values[0])
        if values.size != len(self.joints) or not np.all(np.isfinite(values)) or \
                np.any(values < 0) or np.any(values > MAX_GAIN):
            raise ValueError(f'{name}: expected 1 or {len(self.joints)} values in [0, 1e9], '
                             f'got {values.tolist()}')
        return values

    def _on_trajectory(self, msg):
        try:
            trajectory = from_message(msg, self.joints)
        except InvalidTrajectory as e:
            self.counts.count('trajectories_rejected')
            self.log.warning(f'rejected a trajectory: {e}')
            return
        if sorted(trajectory.joint_names) != sorted(self.joints):
            self.counts.count('trajectories_rejected')
            self.log.warning(f'rejected a trajectory: it must name every joint of {self.joints}')
            return
        order = [trajectory.joint_names.index(j) for j in self.joints]
        stamp = Time.from_msg(msg.header.stamp)
        start = stamp if stamp.nanoseconds > 0 else self.node.get_clock().now()
        self.trajectory = (trajectory, start, order)

    def _on_torques(self, topic, msg):
        tau = np.array(msg.data, dtype=float)
        if tau.shape != (len(self.joints),) or not np.all(np.isfinite(tau)) or \
                np.any(np.abs(tau) > 1e6):
            self.counts.count(f'{topic}_refused')
            self.log.warning(f'{topic} refused: expected {len(self.joints)} finite values '
                             f'of at most 1e6, got {len(tau)}')
            return
        self.latest[topic] = (tau, self.node.get_clock().now())

    def _feedforward(self, now):
        """The fresh feedforward, else the newest of the feedforward and gravity torques (see
        the module docstring), else zero.
        """
        if not self.latest:
            return 0.0
        ff, gravity = self.latest.get('feedforward'), self.latest.get('gravity')
        if ff is not None and (now - ff[1]).nanoseconds * 1e-9 <= self.ff_timeout:
            return ff[0]
        # The feedforward as new as the gravity torques (the same state's, behind a loaded
        # node) still beats them; older, the trajectory has ended or the node stopped it.
        newest = ff if gravity is None or (ff is not None and ff[1] >= gravity[1]) else gravity
        if (now - newest[1]).nanoseconds * 1e-9 > self.ff_timeout:
            self.counts.count('feedforward_late')
        return newest[0]

    def _on_state(self, msg):
        index = {name: k for k, name in enumerate(msg.name)}
        if any(j not in index for j in self.joints) or len(msg.velocity) != len(msg.name) or \
                len(msg.position) != len(msg.name):
            self.counts.count('states_refused')
            self.log.warning('joint state refused: it must carry positions and velocities of '
                             f'{self.joints}')
            return
        rows = [index[j] for j in self.joints]
        q = np.array(msg.position, dtype=float)[rows]
        qd = np.array(msg.velocity, dtype=float)[rows]
        if not (np.all(np.isfinite(q)) and np.all(np.isfinite(qd))):
            self.counts.count('states_refused')
            return
        q_d, qd_d = self._desired(q)
        tau = self.kp * (q_d - q) + self.kd * (qd_d - qd) + \
            self._feedforward(self.node.get_clock().now())
        self.pub.publish(Float64MultiArray(data=tau.tolist()))

    def _desired(self, q):
        """``(q_d, qd_d)`` now: the trajectory's sample, else the held positions."""
        if self.q_hold is None:
            self.q_hold = q.copy()
        if self.trajectory is None:
            return self.q_hold, np.zeros_like(q)
        trajectory, start, order = self.trajectory
        t = (self.node.get_clock().now() - start).nanoseconds * 1e-9
        q_d, qd_d, _ = trajectory.sample(t)
        q_d, qd_d = q_d[order], qd_d[order]
        if t >= trajectory.duration:
            self.q_hold, self.trajectory = q_d.copy(), None
        return q_d, qd_d


def main(args=None):
    """Run the controller until SIGINT; returns the exit code (1: bad parameters)."""
    def start(node, executor):
        EffortController(node)
        executor.spin()

    return run_node('effort_controller', sys.argv if args is None else args, start)


if __name__ == '__main__':
    sys.exit(main())
