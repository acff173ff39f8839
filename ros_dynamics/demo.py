"""The demo: the dynamics node on the bundled demo arm (or your URDF), driven live.

Starts ``dynamics_node`` as its own process, publishes a smooth joint motion on ``joint_states``
as a robot driver would, shows what the node publishes back in the terminal (tool pose, gravity
torques, output rate, latency), then stops the node and writes a PNG plot of the torques along
the motion. ``python -m ros_dynamics.demo --help`` lists the options; ``make demo`` runs it.
"""
import argparse
import os
import shutil
import signal
import subprocess
import sys
import time

import numpy as np

DEMO_URDF = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'robots', 'demo_arm.urdf')


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


def demo_motion(model, t):
    """A smooth motion inside the joint limits: (nq,) positions [rad or m] at time t [s]."""
    lo = np.where(np.isfinite(model.lower_limits), model.lower_limits, -np.pi)
    hi = np.where(np.isfinite(model.upper_limits), model.upper_limits, np.pi)
    mid, half = 0.5 * (lo + hi), 0.4 * (hi - lo)
    phase = np.arange(model.nq)
    return mid + half * np.sin(0.6 * t * (1 + 0.15 * phase) + phase)


def parse_args(argv):
    """Command-line options of the demo."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--urdf', default=DEMO_URDF, help='URDF file (default: the demo arm)')
    parser.add_argument('--duration', type=float, default=8.0, help='run time [s]')
    parser.add_argument('--rate', type=float, default=100.0, help='joint state rate [Hz]')
    parser.add_argument('--output', default='demo_output', help='folder of the PNG plot')
    return parser.parse_args(argv)


def main(argv=None):
    """Run the demo; returns 0 when the node answered, 1 otherwise."""
    args = parse_args(argv)
    from geometry_msgs.msg import PoseStamped
    import rclpy
    from sensor_msgs.msg import JointState

    from .engine import RobotModel

    model = RobotModel.from_urdf_file(args.urdf)
    print(f'[demo] {model.name}: {model.nq} joints {list(model.joint_names)}')
    node = subprocess.Popen([find_node_executable(), '--ros-args', '-p',
                             f'urdf_file:={os.path.abspath(args.urdf)}'])
    rclpy.init()
    client = rclpy.create_node('ros_dynamics_demo')
    sent, log, poses = {}, [], {}

    def on_torques(msg):
        key = (msg.header.stamp.sec, msg.header.stamp.nanosec)
        if key in sent:
            t, q = sent.pop(key)
            log.append((t, time.monotonic() - t, q, np.array(msg.effort)))

    client.create_subscription(JointState, 'gravity_torques', on_torques, 50)
    tips = []
    for frame in model.frame_names:
        if frame not in set(model.frame_parent.values()):
            tips.append(frame)
            client.create_subscription(PoseStamped, f'poses/{frame}',
                                       lambda m, f=frame: poses.__setitem__(f, m), 10)
    pub = client.create_publisher(JointState, 'joint_states', 10)
    status = 0
    try:
        t0 = time.monotonic()
        next_send = t0
        last_print = 0.0
        while time.monotonic() - t0 < args.duration:
            now = time.monotonic()
            if now >= next_send:
                t = now - t0
                q = demo_motion(model, t)
                msg = JointState()
                msg.header.stamp = client.get_clock().now().to_msg()
                msg.name = list(model.joint_names)
                msg.position = q.tolist()
                sent[(msg.header.stamp.sec, msg.header.stamp.nanosec)] = (now, q)
                pub.publish(msg)
                next_send += 1.0 / args.rate
            rclpy.spin_once(client, timeout_sec=0.002)
            if now - last_print > 0.25 and log:
                last_print = now
                _print_status(model, tips, poses, log, now - t0)
        print()
    except KeyboardInterrupt:
        print('\n[demo] interrupted')
    finally:
        node.send_signal(signal.SIGINT)
        try:
            node.wait(10)
        except subprocess.TimeoutExpired:
            node.kill()
        client.destroy_node()
        rclpy.try_shutdown()
    if not log:
        print('[demo] the node did not answer')
        return 1
    latencies = np.array([entry[1] for entry in log]) * 1e3
    print(f'[demo] {len(log)} joint states answered; latency p50 {np.median(latencies):.2f} ms, '
          f'p99 {np.percentile(latencies, 99):.2f} ms')
    for entry in log[-1:]:
        expected = model.gravity_torques(entry[2])
        print(f'[demo] last torques match the engine to {np.abs(entry[3] - expected).max():.1e}'
              ' N m')
    path = _plot(model, log, args.output)
    if path:
        print(f'[demo] plot of the gravity torques: {path}')
    return status


def _print_status(model, tips, poses, log, elapsed):
    t_sent, latency, _, tau = log[-1]
    recent = [e for e in log if e[0] > t_sent - 1.0]
    parts = [f't={elapsed:5.1f}s', f'rate={len(recent):4d}/s', f'lat={latency * 1e3:5.2f}ms']
    if tips and tips[0] in poses:
        p = poses[tips[0]].pose.position
        parts.append(f'{tips[0]}=({p.x:+.3f},{p.y:+.3f},{p.z:+.3f})m')
    parts.append('tau_g=[' + ' '.join(f'{x:+6.1f}' for x in tau[:7]) + '] Nm')
    sys.stdout.write('\r' + '  '.join(parts))
    sys.stdout.flush()


def _plot(model, log, folder):
    try:
        import matplotlib
        matplotlib.use('Agg')
        import matplotlib.pyplot as plt
    except ImportError:
        print('[demo] matplotlib is not installed: no plot')
        return None
    os.makedirs(folder, exist_ok=True)
    t = np.array([e[0] for e in log]) - log[0][0]
    tau = np.array([e[3] for e in log])
    fig, ax = plt.subplots(figsize=(9, 4.5), dpi=110)
    for i, name in enumerate(model.joint_names):
        ax.plot(t, tau[:, i], label=name)
    ax.set_xlabel('time [s]')
    ax.set_ylabel('gravity torque [N m]')
    ax.set_title(f'{model.name}: gravity torques published by dynamics_node')
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    path = os.path.join(folder, 'gravity_torques.png')
    fig.savefig(path)
    plt.close(fig)
    return path


if __name__ == '__main__':
    sys.exit(main())
