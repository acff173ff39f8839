"""The closed loop across processes: ``sim_node`` (MuJoCo), ``dynamics_node`` and, for tracking,
``effort_controller``, each a separate process talking over real topics, in one namespace.

The recorder listens to the simulation's own ``joint_states`` (stamped with simulated time):
what the robot did, measured where a robot's encoders would be.
"""
import contextlib
import os

import numpy as np
import rclpy
from ros_helpers import NodeProcess, spin_until
from sensor_msgs.msg import JointState
from std_srvs.srv import Trigger

#: The dynamics node's parameters in every loop: simulated time, one tip (its per-tip outputs
#: are not what the loop needs).
DYNAMICS_PARAMETERS = ('use_sim_time:=true',)


class StateRecorder:
    """Every joint state of the simulation: times (k,) [s], positions and efforts (k, n)."""

    def __init__(self, node, namespace, joints):
        self.joints = list(joints)
        self.t, self.q, self.qd, self.effort = [], [], [], []
        node.create_subscription(JointState, f'/{namespace}/joint_states', self._on, 1000)

    def _on(self, msg):
        rows = [list(msg.name).index(j) for j in self.joints]
        self.t.append(msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec)
        self.q.append(np.array(msg.position)[rows])
        self.qd.append(np.array(msg.velocity)[rows])
        self.effort.append(np.array(msg.effort)[rows])

    @property
    def now(self):
        return self.t[-1] if self.t else -1.0

    def arrays(self, start=-np.inf, end=np.inf):
        t = np.array(self.t)
        keep = (t >= start) & (t <= end)
        return t[keep], np.array(self.q)[keep], np.array(self.qd)[keep], \
            np.array(self.effort)[keep]

    def first_commanded(self):
        """Simulated time of the first state with an applied torque (the brakes released)."""
        for t, e in zip(self.t, self.effort):
            if np.any(e != 0.0):
                return t
        return None


def wait_sim_time(node, recorder, t, wall_timeout):
    """Spin until the simulation has published a state at simulated time ``t`` [s] or later."""
    return spin_until(node, lambda: recorder.now >= t, wall_timeout)


@contextlib.contextmanager
def processes(tmp_path, *specs):
    """Start ``(label, executable, args...)`` processes; stop them all at the end (exit 0)."""
    started = []
    try:
        for label, name, *args in specs:
            started.append((label, NodeProcess(name, *args,
                                               log_path=os.path.join(tmp_path, label + '.log'))))
        yield dict(started)
    finally:
        codes = {label: p.stop() for label, p in started}
        bad = {label: c for label, c in codes.items() if c != 0}
        assert not bad, (bad, {label: p.output()[-3000:] for label, p in started})


def sim_args(namespace, urdf, joints, q0, real_time_factor):
    return ('-r', f'__ns:=/{namespace}', '-p', f'urdf_file:={urdf}',
            '-p', f'joints:=[{", ".join(joints)}]',
            '-p', f'initial_positions:=[{", ".join(repr(float(x)) for x in q0)}]',
            '-p', f'real_time_factor:={real_time_factor}')


def dynamics_args(namespace, urdf, joints, tip, *remaps, parameters=()):
    return ('-r', f'__ns:=/{namespace}', *(a for r in remaps for a in ('-r', r)),
            '-p', f'urdf_file:={urdf}', '-p', f'command_joints:=[{", ".join(joints)}]',
            '-p', f'tip_frames:=[{tip}]',
            *(a for p in DYNAMICS_PARAMETERS + tuple(parameters) for a in ('-p', p)))


def reset(node, namespace, timeout=30.0):
    """Call the simulation's ``~/reset``; returns the response."""
    client = node.create_client(Trigger, f'/{namespace}/sim/reset')
    assert client.wait_for_service(timeout_sec=timeout)
    future = client.call_async(Trigger.Request())
    rclpy.spin_until_future_complete(node, future, timeout_sec=timeout)
    node.destroy_client(client)
    return future.result()


def random_configuration(model, joints, rng, margin=0.3):
    """Positions of ``joints`` drawn inside their limits (``margin`` [rad] from them, and within
    +-pi for unbounded joints).
    """
    q = []
    for j in joints:
        k = model.joint_names.index(j)
        low = max(model.lower_limits[k], -np.pi) + margin
        high = min(model.upper_limits[k], np.pi) - margin
        q.append(rng.uniform(low, high) if high > low else 0.5 * (low + high))
    return np.array(q)


class Excursion:
    """``q(t) = q0 + A (1 - cos(2 pi t / period)) / 2`` for ``0 <= t <= duration`` [s]: from
    rest at ``q0`` out by ``A`` and back, ``duration / period`` times; its samples as a
    trajectory_msgs/JointTrajectory with positions, velocities and accelerations (quintic).
    """

    def __init__(self, q0, amplitude, duration=5.0, period=2.5):
        self.q0, self.amplitude = np.asarray(q0, float), np.asarray(amplitude, float)
        self.duration, self.omega = duration, 2 * np.pi / period

    def __call__(self, t):
        """Positions, velocities, accelerations (len(t), n) at times ``t`` (k,) [s]."""
        t = np.clip(np.asarray(t, float), 0.0, self.duration)[:, None]
        a, w = self.amplitude, self.omega
        return (self.q0 + a * (1 - np.cos(w * t)) / 2, a * w * np.sin(w * t) / 2,
                a * w ** 2 * np.cos(w * t) / 2)

    def message(self, joints, start, dt=0.05):
        """The trajectory starting at simulated time ``start`` [s], a point every ``dt``."""
        from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint
        msg = JointTrajectory()
        msg.header.stamp.sec = int(start)
        msg.header.stamp.nanosec = int(round((start - int(start)) * 1e9))
        msg.joint_names = list(joints)
        times = np.arange(0.0, self.duration + dt / 2, dt)
        for t, q, v, a in zip(times, *self(times)):
            point = JointTrajectoryPoint(positions=q.tolist(), velocities=v.tolist(),
                                         accelerations=a.tolist())
            point.time_from_start.sec = int(t)
            point.time_from_start.nanosec = int(round((t - int(t)) * 1e9))
            msg.points.append(point)
        return msg


def excursion_near_limits(model, joints, q0, fraction=0.8, reach=2.5):
    """An :class:`Excursion` from ``q0`` towards the farther joint limit, ``fraction`` of the
    way there (at most ``reach`` [rad]).
    """
    amplitude = []
    for j, q in zip(joints, q0):
        k = model.joint_names.index(j)
        up, down = min(model.upper_limits[k], q + reach) - q, max(model.lower_limits[k],
                                                                  q - reach) - q
        amplitude.append(fraction * (up if up >= -down else down))
    return Excursion(q0, amplitude)


def controller_args(namespace, joints, kp, kd, feedforward):
    """The effort controller's arguments: commands to the simulation, ``feedforward`` from the
    dynamics node's ``feedforward_command`` (True) or nothing (the PD + gravity baseline).
    """
    ff = 'feedforward_command' if feedforward else 'unconnected_feedforward'
    return ('-r', f'__ns:=/{namespace}', '-r', 'commands:=sim/commands',
            '-r', f'feedforward:={ff}', '-r', 'gravity:=gravity_command',
            '-p', 'use_sim_time:=true', '-p', f'joints:=[{", ".join(joints)}]',
            '-p', f'kp:=[{", ".join(repr(float(k)) for k in kp)}]',
            '-p', f'kd:=[{", ".join(repr(float(k)) for k in kd)}]')
