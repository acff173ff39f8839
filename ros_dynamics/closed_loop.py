"""The closed loop of the demo, the tests and the benchmark: the simulated robot
(``sim_node``), ``dynamics_node`` and the PD + feedforward ``effort_controller`` as separate
processes over real topics in one namespace, their arguments, a recorder of what the robot did,
and the motions and gains they run.

Everything runs on simulated time: the simulation publishes ``/clock`` and steps in lockstep
with its commands (``lockstep_timeout``), so that a loaded machine slows the loop rather than
delaying the commands by steps.
"""
import numpy as np

#: The dynamics node's parameters in every loop: simulated time, no IK seed table (the loop
#: does not solve IK; it would only delay the start).
DYNAMICS_PARAMETERS = ('use_sim_time:=true', 'ik.seed_samples:=0')
#: The simulation's parameters for the rigid bodies alone: no joint damping or friction (the
#: model the node computes with, without its friction option; the hold phase keeps the URDF's
#: damping, which a gravity-only loop needs).
RIGID = ('urdf_dynamics:=false', 'default_damping:=0.0', 'friction:=false')
#: With a controller between the node and the simulation: the node's gravity_command (one per
#: state it serves) paces the lockstep too, so that the node cannot fall behind the controller
#: on a loaded machine (its feedforward would then be for states long past).
PACED = ('lockstep_topics:=[gravity_command]',)


class StateRecorder:
    """Every joint state of the simulation: times (k,) [s], positions and efforts (k, n)."""

    def __init__(self, node, namespace, joints):
        self.joints = list(joints)
        self.t, self.q, self.qd, self.effort = [], [], [], []
        from sensor_msgs.msg import JointState
        node.create_subscription(JointState, f'/{namespace}/joint_states', self._on, 1000)

    def _on(self, msg):
        rows = [list(msg.name).index(j) for j in self.joints]
        self.t.append(msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec)
        self.q.append(np.array(msg.position)[rows])
        self.qd.append(np.array(msg.velocity)[rows])
        self.effort.append(np.array(msg.effort)[rows])

    @property
    def now(self):
        """Simulated time [s] of the latest state (-1 before any)."""
        return self.t[-1] if self.t else -1.0

    def arrays(self, start=-np.inf, end=np.inf):
        """``(t, q, qd, effort)`` of the states stamped in ``[start, end]`` [s]."""
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


def sim_args(namespace, urdf, joints, q0, real_time_factor, *parameters):
    """The simulation's arguments: in lockstep (a command after each state, waited for up to
    0.5 s), so that a loaded machine slows the loop instead of delaying its commands.
    """
    return ('-r', f'__ns:=/{namespace}', '-p', f'urdf_file:={urdf}',
            '-p', f'joints:=[{", ".join(joints)}]',
            '-p', f'initial_positions:=[{", ".join(repr(float(x)) for x in q0)}]',
            '-p', f'real_time_factor:={real_time_factor}', '-p', 'lockstep_timeout:=0.5',
            *(a for p in parameters for a in ('-p', p)))


def dynamics_args(namespace, urdf, joints, tip, *remaps, parameters=()):
    """The dynamics node's arguments: ``remaps`` (``from:=to``), the command order, one tip,
    :data:`DYNAMICS_PARAMETERS` and ``parameters`` (``name:=value``).
    """
    return ('-r', f'__ns:=/{namespace}', *(a for r in remaps for a in ('-r', r)),
            '-p', f'urdf_file:={urdf}', '-p', f'command_joints:=[{", ".join(joints)}]',
            '-p', f'tip_frames:=[{tip}]',
            *(a for p in DYNAMICS_PARAMETERS + tuple(parameters) for a in ('-p', p)))


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
    rest at ``q0`` out by ``A`` and back, ``duration / period`` times (``period``: one for
    every joint, or (n,), one each: the payload excitation); its samples as a
    trajectory_msgs/JointTrajectory with positions, velocities and accelerations (quintic).
    """

    def __init__(self, q0, amplitude, duration=5.0, period=5.0):
        self.q0, self.amplitude = np.asarray(q0, float), np.asarray(amplitude, float)
        self.duration, self.omega = duration, 2 * np.pi / np.asarray(period, float)

    def __call__(self, t):
        """Positions, velocities, accelerations (len(t), n) at times ``t`` (k,) [s]."""
        t = np.clip(np.asarray(t, float), 0.0, self.duration)[:, None]
        a, w = self.amplitude, self.omega
        return (self.q0 + a * (1 - np.cos(w * t)) / 2, a * w * np.sin(w * t) / 2,
                a * w ** 2 * np.cos(w * t) / 2)

    def configurations(self, count=101):
        """Positions (count, n) at ``count`` times evenly spread over the motion."""
        return self(np.linspace(0.0, self.duration, count))[0]

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


def model_q(model, joints, q):
    """The model's configuration with ``joints`` at ``q`` (others 0)."""
    full = np.zeros(model.nq)
    for j, value in zip(joints, q):
        full[model.q_names.index(j)] = value
    return full


#: Bandwidth of the PD of every loop [Hz] (:func:`gains`).
PD_FREQUENCY = 4.0


def gains(model, joints, configurations, frequency=PD_FREQUENCY):
    """The same PD gains for both controllers: a critically damped loop of ``frequency`` [Hz]
    on each joint's inertia ``sqrt(M_jj / (M^-1)_jj)``, its least over ``configurations``
    (k, n) of ``joints`` (the motion's): the geometric mean of the joint's own inertia ``M_jj``
    (what it moves when every other joint is locked) and its effective inertia
    ``1 / (M^-1)_jj`` (when every other joint gives way).

    Not ``M_jj`` alone: where two axes line up (a Panda's joints 1 and 3 as joint 2 crosses
    zero) turning one against the other moves almost nothing, and gains from ``M_jj`` give
    that motion a derivative gain far above its inertia per step, which one step of delay
    makes diverge (Panda's tracking at 2 Hz, TALOS's at 4 Hz). Not the effective inertia
    alone: a wrist's gains become so light that, the other joints holding stiff, it rings for
    seconds (a payload the node does not know yet swings it by a radian). Measured with
    MuJoCo and a one-step-delayed PD + exact inverse dynamics: 4 Hz tracks every robot of the
    benchmark (ratio to PD + gravity 0.005-0.02), and at 4 Hz a 20 N push no longer spins a
    light wrist away from the observer (the demo arm's estimate at 2 Hz was 8 % off).
    """
    index = [model.v_names.index(j) for j in joints]
    inertia = np.full(len(joints), np.inf)
    for q in np.atleast_2d(configurations):
        M = model.mass_matrix(model_q(model, joints, q))
        inertia = np.minimum(inertia, np.sqrt(np.diag(M)[index] /
                                              np.diag(np.linalg.inv(M))[index]))
    omega = 2 * np.pi * frequency
    return inertia * omega ** 2, 2 * inertia * omega
