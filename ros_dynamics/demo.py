"""The demo: the dynamics node closing control loops on a simulated robot it did not compute.

On the bundled demo arm (or ``--urdf``), each phase its own processes in its own namespace:
``sim_node`` (MuJoCo, 1 kHz of simulated time, in lockstep with its commands), ``dynamics_node``
and, for tracking, ``effort_controller`` (:mod:`ros_dynamics.closed_loop`):

1. *hold*: the node's ``gravity_command`` alone drives the robot from a random configuration;
2. *track*: a 5 s trajectory near the joint limits on ``joint_trajectory``, tracked by PD + the
   node's ``feedforward_command``, then one 20 N push on the tip for 0.4 s while it holds;
3. *baseline*: the same trajectory and gains, PD + ``gravity_command`` only.

Printed: the hold drift, the tracking errors and their ratio, the push as the node estimated
it (``wrench_estimates/<tip>``) against the one applied, and how soon ``collision`` rose.
Written: ``<output>/closed_loop.png`` (tracking errors; estimated and applied push).
``python -m ros_dynamics.demo --help`` lists the options; ``make demo`` runs it.
"""
import argparse
import os
import shutil
import signal
import subprocess
import sys
import time

import numpy as np

from . import closed_loop as loop

DEMO_URDF = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'robots', 'demo_arm.urdf')
#: Simulated seconds per wall second at most (the node computes every output at 1 kHz of
#: simulated time; half of real time leaves a loaded machine room).
REAL_TIME_FACTOR = 0.5
#: The payload of :func:`payload_phase`: 1.5 kg, its center of mass 5 cm off the tool's z axis
#: [kg], [m] in the tip's axes; the excitation's length [s].
PAYLOAD_MASS, PAYLOAD_COM, IDENTIFY_SECONDS = 1.5, np.array([0.03, -0.04, 0.06]), 10.0
#: Simulated time [s] the payload phase holds before it measures the hold (the excitation,
#: tracked without the payload in the node's model, leaves the arm ringing for a few seconds).
SETTLE = 5.0
#: The push: 20 N in the tip's axes.
PUSH_TIP = np.array([12.0, -16.0, 0.0])


def find_node_executable(name='dynamics_node'):
    """Installed entry point: next to this interpreter (venv) or in ``lib/ros_dynamics``."""
    candidates = [os.path.join(os.path.dirname(sys.executable), name)]
    try:
        from ament_index_python.packages import get_package_prefix
        candidates.append(os.path.join(get_package_prefix('ros_dynamics'), 'lib', 'ros_dynamics',
                                       name))
    except (ImportError, LookupError):
        pass
    for path in candidates:
        if os.access(path, os.X_OK):
            return path
    found = shutil.which(name)
    if found:
        return found
    raise SystemExit(f'demo: cannot find the {name} executable (run `make env` first)')


def parse_args(argv):
    """Command-line options of the demo."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--urdf', default=DEMO_URDF, help='URDF file (default: the demo arm)')
    parser.add_argument('--tip', default='', help='tip frame (default: the first default tip)')
    parser.add_argument('--hold', type=float, default=3.0, help='hold phase [s of sim time]')
    parser.add_argument('--duration', type=float, default=5.0, help='trajectory [s]')
    parser.add_argument('--pd-frequency', type=float, default=loop.PD_FREQUENCY,
                        help='bandwidth of the PD controller [Hz] (default: %(default)s)')
    parser.add_argument('--output', default='demo_output', help='folder of the PNG plot')
    return parser.parse_args(argv)


class Phase:
    """Processes of one phase, their logs in ``folder``; stopped with SIGINT on exit."""

    def __init__(self, folder, *specs):
        self.procs = []
        for label, name, *args in specs:
            log = open(os.path.join(folder, f'{label}.log'), 'w')
            self.procs.append((label, subprocess.Popen(
                [find_node_executable(name), '--ros-args', *args], stdout=log,
                stderr=subprocess.STDOUT), log))

    def __enter__(self):
        return self

    def __exit__(self, *_):
        for _, proc, _ in self.procs:
            proc.send_signal(signal.SIGINT)
        for _, proc, log in self.procs:
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
            log.close()


def spin_until(node, predicate, timeout):
    """Spin ``node`` until ``predicate()`` or ``timeout`` [s]; returns ``predicate()``."""
    import rclpy
    end = time.monotonic() + timeout
    while time.monotonic() < end and not predicate():
        rclpy.spin_once(node, timeout_sec=0.02)
    return predicate()


def main(argv=None):
    """Run the demo; returns 0 when every phase ran, 1 otherwise."""
    args = parse_args(argv)
    import rclpy

    from .engine import RobotModel
    from .ros.default_tips import default_tips

    urdf = os.path.abspath(args.urdf)
    model = RobotModel.from_urdf_file(urdf)
    tip = args.tip or default_tips(model)[0]
    joints = list(model.actuated_joint_names)
    rng = np.random.default_rng(7)
    q0 = loop.random_configuration(model, joints, rng, margin=0.5)
    excursion = loop.excursion_near_limits(model, joints, q0, fraction=0.6)
    kp, kd = loop.gains(model, joints, excursion.configurations(),
                        frequency=args.pd_frequency)
    os.makedirs(args.output, exist_ok=True)
    print(f'[demo] {model.name}: {len(joints)} joints, tip {tip}; MuJoCo simulation, '
          f'logs in {args.output}/', flush=True)
    rclpy.init()
    client = rclpy.create_node('ros_dynamics_demo')
    try:
        hold = hold_phase(client, args, urdf, joints, tip, q0)
        tracked = track_phase(client, args, urdf, model, joints, tip, q0, kp, kd, excursion, True)
        baseline = track_phase(client, args, urdf, model, joints, tip, q0, kp, kd, excursion, False)
    except TimeoutError as err:
        print(f'[demo] {err}; see the logs in {args.output}/')
        return 1
    finally:
        client.destroy_node()
        rclpy.try_shutdown()
    _summary(model, tip, hold, tracked, baseline)
    path = _plot(model, tip, tracked, baseline, args.output)
    if path:
        print(f'[demo] plot of the tracking errors and of the push: {path}')
    return 0


def hold_phase(client, args, urdf, joints, tip, q0):
    """Worst joint drift [rad] over ``args.hold`` s with gravity_command alone."""
    ns = 'demo_hold'
    recorder = loop.StateRecorder(client, ns, joints)
    with Phase(args.output,
               ('hold_sim', 'sim_node', *loop.sim_args(ns, urdf, joints, q0, REAL_TIME_FACTOR)),
               ('hold_dynamics', 'dynamics_node', *loop.dynamics_args(
                   ns, urdf, joints, tip, 'gravity_command:=sim/commands'))):
        _wait(client, lambda: recorder.first_commanded() is not None, 60.0, 'no command came')
        start = recorder.first_commanded()
        _wait(client, lambda: recorder.now >= start + args.hold, 30.0 + 10 * args.hold,
              'the hold did not finish')
    _, q, _, _ = recorder.arrays(start, start + args.hold)
    drift = float(np.max(np.abs(q - q0)))
    print(f'[demo] hold: gravity_command alone, worst joint drift {drift * 1e3:.3f} mrad over '
          f'{args.hold:g} s', flush=True)
    return drift


def track_phase(client, args, urdf, model, joints, tip, q0, kp, kd, excursion, feedforward):
    """Tracking (and, with ``feedforward``, the push): a dict of what was measured."""
    from geometry_msgs.msg import WrenchStamped
    from std_msgs.msg import Bool
    from trajectory_msgs.msg import JointTrajectory
    label = 'track' if feedforward else 'baseline'
    ns = f'demo_{label}'
    excursion.duration = args.duration
    recorder = loop.StateRecorder(client, ns, joints)
    estimates, flags = [], []
    client.create_subscription(WrenchStamped, f'/{ns}/wrench_estimates/{tip}',
                               estimates.append, 1000)
    client.create_subscription(Bool, f'/{ns}/collision', lambda m: flags.append(
        (recorder.now, m.data)), 10)
    trajectory = client.create_publisher(JointTrajectory, f'/{ns}/joint_trajectory', 10)
    push = client.create_publisher(WrenchStamped, f'/{ns}/sim/wrench', 10)
    out = {}
    with Phase(args.output,
               (f'{label}_sim', 'sim_node', *loop.sim_args(ns, urdf, joints, q0,
                                                            REAL_TIME_FACTOR, *loop.RIGID,
                                                            *loop.PACED)),
               (f'{label}_dynamics', 'dynamics_node', *loop.dynamics_args(
                   ns, urdf, joints, tip, parameters=(
                       # The push is a force: estimated as one, it needs no full-rank
                       # Jacobian (the arm's pose after the excursion is near a wrist
                       # singularity, where a whole wrench is not observable).
                       'observer.gain:=300.0', 'collision.threshold:=4.0',
                       'wrench_estimates.force_only:=true'))),
               (f'{label}_controller', 'effort_controller',
                *loop.controller_args(ns, joints, kp, kd, feedforward))):
        _wait(client, lambda: recorder.first_commanded() is not None, 60.0,
              f'{label}: the controller never commanded')
        _wait(client, lambda: trajectory.get_subscription_count() >= 2 and
              push.get_subscription_count() >= 1, 30.0,
              f'{label}: the controller or the node does not listen')
        start = recorder.now + 1.0
        trajectory.publish(excursion.message(joints, start))
        end = start + excursion.duration
        _wait(client, lambda: recorder.now >= end + 0.3, 60.0 + 10 * excursion.duration,
              f'{label}: the trajectory did not finish')
        if feedforward:
            # Not the brakes' push before the first command: the tracking, from its start.
            out['free_flags'] = [on for s, on in flags if s >= start]
            msg = WrenchStamped()
            msg.header.frame_id = tip
            msg.wrench.force.x, msg.wrench.force.y, msg.wrench.force.z = PUSH_TIP.tolist()
            out['push_at'] = recorder.now
            push.publish(msg)
            _wait(client, lambda: recorder.now >= out['push_at'] + 0.4, 30.0, 'push: no time')
            push.publish(WrenchStamped(header=msg.header))
            _wait(client, lambda: recorder.now >= out['push_at'] + 0.6, 30.0, 'push: no time')
    t, q, _, _ = recorder.arrays(start, end)
    q_d, _, _ = excursion(t - start)
    out.update(t=t - start, error=np.linalg.norm(q - q_d, axis=1),
               rms=float(np.sqrt(np.mean((q - q_d) ** 2))), estimates=estimates, flags=flags,
               recorder=recorder)
    print(f'[demo] {label}: PD + {"feedforward_command" if feedforward else "gravity_command"},'
          f' RMS tracking error {out["rms"] * 1e3:.2f} mrad', flush=True)
    return out


def payload_excitation(model, joints, q0, duration=IDENTIFY_SECONDS):
    """The excitation that identifies a payload: every joint out toward its farther limit (0.4
    of the way) and back, joint *k* (1-based) *k* times in ``duration`` [s], so that the tool
    turns through many orientations against gravity.
    """
    amplitude = loop.excursion_near_limits(model, joints, q0, fraction=0.4).amplitude
    return loop.Excursion(q0, amplitude, duration,
                          period=duration / np.arange(1, len(joints) + 1))


def payload_phase(client, folder, urdf, model, joints, tip, q0, ns='demo_payload',
                  real_time_factor=REAL_TIME_FACTOR):
    """:data:`PAYLOAD_MASS` at :data:`PAYLOAD_COM` attached to ``tip`` in the simulation only,
    while PD + the node's feedforward hold ``q0``: the hold's sag, ``~/identify_payload``
    (applied) over :func:`payload_excitation`, then the hold again. Not in ``make demo`` (it
    would double its time): the benchmark and the tests run it. The PD gains are the arm's
    with the payload, the same throughout. Returns a dict: ``mass`` [kg], ``com`` (3,) [m] in
    the tip's axes, ``condition``, ``samples``, ``applied``, and the worst joint error [rad]
    over the last 0.5 s of :data:`SETTLE` s of holding, ``before`` and ``after``.
    """
    import rclpy
    from trajectory_msgs.msg import JointTrajectory

    from ros_dynamics_interfaces.srv import IdentifyPayload

    from .engine import Payload
    excitation = payload_excitation(model, joints, q0)
    unloaded = model.settings
    model.update_settings(payloads=[Payload(tip, PAYLOAD_MASS, PAYLOAD_COM)])
    try:
        kp, kd = loop.gains(model, joints, excitation.configurations())
    finally:
        model.settings = unloaded
    recorder = loop.StateRecorder(client, ns, joints)
    trajectory = client.create_publisher(JointTrajectory, f'/{ns}/joint_trajectory', 10)
    identify = client.create_client(IdentifyPayload, f'/{ns}/ros_dynamics/identify_payload')
    with Phase(folder,
               (f'{ns}_sim', 'sim_node', *loop.sim_args(
                   ns, urdf, joints, q0, real_time_factor, *loop.RIGID, *loop.PACED,
                   f'payload.link:={tip}', f'payload.mass:={PAYLOAD_MASS}',
                   f'payload.com:={PAYLOAD_COM.tolist()}')),
               (f'{ns}_dynamics', 'dynamics_node', *loop.dynamics_args(ns, urdf, joints, tip)),
               (f'{ns}_controller', 'effort_controller',
                *loop.controller_args(ns, joints, kp, kd, True))):
        _wait(client, lambda: recorder.first_commanded() is not None, 90.0,
              'payload: the controller never commanded')
        _wait(client, lambda: identify.service_is_ready() and
              trajectory.get_subscription_count() >= 2, 30.0,
              'payload: the node or the controller does not listen')

        def sag():
            end = recorder.now + SETTLE
            _wait(client, lambda: recorder.now >= end, 120.0, 'payload: the hold stopped')
            _, q, _, _ = recorder.arrays(end - 0.5, end)
            return float(np.max(np.abs(q - q0)))

        before = sag()
        start = recorder.now + 0.5
        trajectory.publish(excitation.message(joints, start))
        _wait(client, lambda: recorder.now >= start, 60.0, 'payload: no time')
        request = IdentifyPayload.Request(frame=tip, apply=True)
        request.duration.sec = int(excitation.duration)
        future = identify.call_async(request)
        rclpy.spin_until_future_complete(client, future, timeout_sec=300.0)
        result = future.result()
        if result is None or not result.success:
            raise TimeoutError(f'payload: not identified ({result})')
        after = sag()
    com = np.array([result.inertia.com.x, result.inertia.com.y, result.inertia.com.z])
    out = {'mass': result.inertia.m, 'com': com, 'condition': result.condition_number,
           'samples': result.samples, 'applied': result.applied, 'before': before,
           'after': after}
    print(f'[demo] payload {PAYLOAD_MASS} kg at {PAYLOAD_COM} m: identified '
          f'{out["mass"]:.4f} kg at {com.round(5)} m (condition {out["condition"]:.1f}); '
          f'hold error {before * 1e3:.2f} mrad before, {after * 1e3:.3f} mrad after',
          flush=True)
    return out


def _wait(client, predicate, timeout, what):
    if not spin_until(client, predicate, timeout):
        raise TimeoutError(what)


def push_figures(model, tip, tracked):
    """``(times, estimated forces, applied force, force error, direction error [deg], flag
    delay [s])`` of the push, in the world (= base) frame.
    """
    joints = tracked['recorder'].joints
    t, q, _, _ = tracked['recorder'].arrays()
    at = tracked['push_at']
    stamps = np.array([m.header.stamp.sec + 1e-9 * m.header.stamp.nanosec
                       for m in tracked['estimates']])

    def applied_at(s):        # the push is held in the tip's axes: in the world, as it turns
        k = min(int(np.searchsorted(t, s)), len(q) - 1)
        return model.frame_pose(loop.model_q(model, joints, q[k]), tip)[:3, :3] @ PUSH_TIP

    applied = applied_at(at + 0.2)
    forces = np.array([[m.wrench.force.x, m.wrench.force.y, m.wrench.force.z]
                       for m in tracked['estimates']])
    late = np.flatnonzero(stamps >= at + 0.2)
    if not late.size:
        return stamps - at, forces, applied, None, None, None
    f, applied = forces[late[0]], applied_at(stamps[late[0]])
    error = float(np.linalg.norm(f - applied) / np.linalg.norm(applied))
    angle = float(np.degrees(np.arccos(np.clip(f @ applied / np.linalg.norm(f) /
                                               np.linalg.norm(applied), -1, 1))))
    rises = [s for s, on in tracked['flags'] if on and s >= at]
    delay = rises[0] - at if rises else None
    return stamps - at, forces, applied, error, angle, delay


def _summary(model, tip, hold, tracked, baseline):
    _, _, applied, error, angle, delay = push_figures(model, tip, tracked)
    ratio = tracked['rms'] / baseline['rms']
    lines = [
        f'hold drift (gravity_command alone)      {hold * 1e3:9.3f} mrad   (goal <= 1 mrad '
        'over 10 s)',
        f'tracking RMS, PD + feedforward_command  {tracked["rms"] * 1e3:9.2f} mrad',
        f'tracking RMS, PD + gravity_command      {baseline["rms"] * 1e3:9.2f} mrad   ratio '
        f'{ratio:.3f} (goal <= 0.2)',
        f'push of {np.linalg.norm(applied):.0f} N, estimated after 200 ms  '
        + (f'{100 * error:9.2f} % in force, {angle:.2f} deg (goals 5 %, 3 deg)'
           if error is not None else 'no estimate'),
        'collision flag seen by this client     '
        + (f'{1e3 * delay:9.0f} ms after the push (the node flags within 1-3 ms of simulated '
           'time; this includes the topic and the recorder)' if delay is not None
           else 'not seen'),
        f'collision flags in free tracking       {sum(tracked["free_flags"]):9d}',
    ]
    print('[demo] ---- summary ----')
    for line in lines:
        print(f'[demo] {line}')


def _plot(model, tip, tracked, baseline, folder):
    try:
        import matplotlib
        matplotlib.use('Agg')
        import matplotlib.pyplot as plt
    except ImportError:
        print('[demo] matplotlib is not installed: no plot')
        return None
    fig, axes = plt.subplots(2, 1, figsize=(9, 7), dpi=110)
    for data, name in ((tracked, 'PD + feedforward_command'), (baseline, 'PD + gravity only')):
        axes[0].semilogy(data['t'], np.maximum(data['error'], 1e-7) * 1e3, label=name)
    axes[0].set_title(f'{model.name}: tracking error |q - q_d| on the simulated robot')
    axes[0].set_xlabel('time into the trajectory [s]')
    axes[0].set_ylabel('[mrad]')
    t, forces, applied, *_ = push_figures(model, tip, tracked)
    for i, axis in enumerate('xyz'):
        line, = axes[1].plot(t * 1e3, forces[:, i] if len(forces) else [], label=f'estimated '
                             f'f{axis}')
        axes[1].axhline(applied[i], color=line.get_color(), linestyle='--', linewidth=0.8)
    axes[1].axvspan(0, 400, color='0.9')
    axes[1].set_xlim(-200, 600)
    axes[1].set_title(f'push on {tip}: wrench_estimates/{tip} (lines) and the force applied '
                      'at 200 ms (dashed; grey: while applied)', fontsize=9)
    axes[1].set_xlabel('time from the push [ms]')
    axes[1].set_ylabel('[N]')
    for ax in axes:
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    path = os.path.join(folder, 'closed_loop.png')
    fig.savefig(path)
    plt.close(fig)
    return path


if __name__ == '__main__':
    sys.exit(main())
