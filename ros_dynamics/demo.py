"""The demo: the dynamics node on the bundled demo arm (or your URDF), driven live.

Starts ``dynamics_node`` as its own process and plays a planner and a robot: it sends a
trajectory on ``joint_trajectory`` (as to a joint_trajectory_controller) and publishes
``joint_states`` that follow it. The terminal shows what the node publishes back (tool pose,
gravity and feedforward torques, output rate, latency) and an IK round trip through
``~/solve_ik``; at the end the node is stopped and a PNG plot of the feedforward and gravity
torques along the trajectory is written. ``python -m ros_dynamics.demo --help`` lists the
options; ``make demo`` runs it.
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
    """A smooth motion inside the joint limits at time t [s]: positions, velocities and
    accelerations (nq,) [rad, rad/s, rad/s^2 or m, m/s, m/s^2].
    """
    lo = np.where(np.isfinite(model.lower_limits), model.lower_limits, -np.pi)
    hi = np.where(np.isfinite(model.upper_limits), model.upper_limits, np.pi)
    mid, half = 0.5 * (lo + hi), 0.25 * np.minimum(hi - lo, 2 * np.pi)
    phase = np.arange(model.nq)
    omega = 0.8 * (1 + 0.15 * phase)
    angle = omega * t + phase
    return (mid + half * np.sin(angle), half * omega * np.cos(angle),
            -half * omega ** 2 * np.sin(angle))


def demo_trajectory(model, duration, step=0.1):
    """The demo motion as a trajectory_msgs/JointTrajectory with velocities and accelerations."""
    from builtin_interfaces.msg import Duration
    from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint
    msg = JointTrajectory()
    msg.joint_names = list(model.joint_names)
    for t in np.arange(0.0, duration + 1e-9, step):
        q, qd, qdd = demo_motion(model, t)
        msg.points.append(JointTrajectoryPoint(
            positions=q.tolist(), velocities=qd.tolist(), accelerations=qdd.tolist(),
            time_from_start=Duration(sec=int(t), nanosec=int(round((t % 1) * 1e9)))))
    return msg


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
    from std_msgs.msg import Float64MultiArray
    from trajectory_msgs.msg import JointTrajectory

    from .engine import RobotModel

    model = RobotModel.from_urdf_file(args.urdf)
    print(f'[demo] {model.name}: {model.nq} joints {list(model.joint_names)}')
    node = subprocess.Popen([find_node_executable(), '--ros-args', '-p',
                             f'urdf_file:={os.path.abspath(args.urdf)}'])
    rclpy.init()
    client = rclpy.create_node('ros_dynamics_demo')
    sent, log, poses, feedforward, planned = {}, [], {}, [], []

    def on_torques(msg):
        key = (msg.header.stamp.sec, msg.header.stamp.nanosec)
        if key in sent:
            t, q = sent.pop(key)
            log.append((t, time.monotonic() - t, q, np.array(msg.effort)))

    client.create_subscription(JointState, 'gravity_torques', on_torques, 50)
    client.create_subscription(Float64MultiArray, 'feedforward_command',
                               lambda m: feedforward.append(np.array(m.data)), 50)
    client.create_subscription(JointTrajectory, 'feedforward_trajectory', planned.append, 5)
    parents = set(model.frame_parent.values())
    tips = [f for f in model.frame_names if f not in parents]
    for frame in tips:
        client.create_subscription(PoseStamped, f'poses/{frame}',
                                   lambda m, f=frame: poses.__setitem__(f, m), 10)
    pub = client.create_publisher(JointState, 'joint_states', 10)
    traj_pub = client.create_publisher(JointTrajectory, 'joint_trajectory', 10)
    ik_report = []
    try:
        _wait_for_node(client, pub, model, timeout=15.0)
        trajectory = demo_trajectory(model, args.duration)
        trajectory.header.stamp = client.get_clock().now().to_msg()
        traj_pub.publish(trajectory)
        t0 = time.monotonic()
        next_send, last_print, ik_done = t0, 0.0, False
        while time.monotonic() - t0 < args.duration:
            now = time.monotonic()
            if now >= next_send:
                q, qd, _ = demo_motion(model, now - t0)
                msg = JointState()
                msg.header.stamp = client.get_clock().now().to_msg()
                msg.name = list(model.joint_names)
                msg.position, msg.velocity = q.tolist(), qd.tolist()
                sent[(msg.header.stamp.sec, msg.header.stamp.nanosec)] = (now, q)
                pub.publish(msg)
                next_send += 1.0 / args.rate
            rclpy.spin_once(client, timeout_sec=0.002)
            if not ik_done and now - t0 > 0.5 * args.duration and tips:
                ik_done = True
                ik_report = _ik_round_trip(client, model, tips[0], now - t0)
            if now - last_print >= 1.0 and log:
                last_print = now
                _print_status(tips, poses, log, feedforward, now - t0, sent_count(sent, log))
    except KeyboardInterrupt:
        print('[demo] interrupted', flush=True)
    finally:
        node.send_signal(signal.SIGINT)
        try:
            node.wait(10)
        except subprocess.TimeoutExpired:
            node.kill()
        client.destroy_node()
        rclpy.try_shutdown()
    for line in ik_report:
        print(line)
    if not log:
        print('[demo] the node did not answer')
        return 1
    latencies = np.array([entry[1] for entry in log]) * 1e3
    print(f'[demo] {sent_count(sent, log)} joint states sent, {len(log)} answered; latency '
          f'p50 {np.median(latencies):.2f} ms, p99 {np.percentile(latencies, 99):.2f} ms; '
          f'{len(feedforward)} feedforward commands')
    expected = model.gravity_torques(log[-1][2])
    print(f'[demo] last gravity torques match the engine to '
          f'{np.abs(log[-1][3] - expected).max():.1e} N m')
    path = _plot(model, log, planned, args.output)
    if path:
        print(f'[demo] plot of the feedforward and gravity torques: {path}')
    return 0


def _wait_for_node(client, pub, model, timeout):
    """Publish the start state until the node answers (it may still be starting)."""
    import rclpy
    from sensor_msgs.msg import JointState
    got = []
    sub = client.create_subscription(JointState, 'gravity_torques', got.append, 10)
    end = time.monotonic() + timeout
    q = demo_motion(model, 0.0)[0]
    while not got and time.monotonic() < end:
        pub.publish(JointState(name=list(model.joint_names), position=q.tolist()))
        rclpy.spin_once(client, timeout_sec=0.05)
    client.destroy_subscription(sub)
    if not got:
        raise SystemExit('[demo] the node did not start answering')


def _ik_round_trip(client, model, tip, t):
    """Ask ~/solve_ik for the pose the tip will have 1.5 s after t (the node seeds the search
    with the current joint state); report the result.
    """
    import rclpy
    try:
        from ros_dynamics_interfaces.srv import SolveIK
    except ImportError:
        return ['[demo] IK round trip skipped: ros_dynamics_interfaces is not built']
    from .ros.conversions import pose_from_matrix
    ik = client.create_client(SolveIK, '/ros_dynamics/solve_ik')
    if not ik.wait_for_service(timeout_sec=2.0):
        return ['[demo] IK round trip: the service is not available']
    q_true = demo_motion(model, t + 1.5)[0]
    request = SolveIK.Request()
    request.tip_frame = tip
    pose_from_matrix(model.frame_pose(q_true, tip), request.target.pose)
    started = time.monotonic()
    future = ik.call_async(request)
    while not future.done() and time.monotonic() - started < 5.0:
        rclpy.spin_once(client, timeout_sec=0.01)
    if not future.done():
        return ['[demo] IK round trip: no answer']
    res = future.result()
    q = np.array(res.solution.position)
    err = np.linalg.norm(model.frame_pose(q, tip)[:3, 3] - model.frame_pose(q_true, tip)[:3, 3]) \
        if len(q) == model.nq else float('nan')
    return [f'[demo] IK round trip for {tip}: success={res.success} ({res.message}); '
            f'{(time.monotonic() - started) * 1e3:.1f} ms; FK of the answer is {err:.1e} m from '
            'the target']


def sent_count(sent, log):
    """Joint states sent so far: those still unanswered plus those answered."""
    return len(sent) + len(log)


def _print_status(tips, poses, log, feedforward, elapsed, sent):
    """One whole line per second (readable in a terminal and in a log file)."""
    t_sent, latency, _, tau = log[-1]
    recent = [e for e in log if e[0] > t_sent - 1.0]
    parts = [f'[demo] t={elapsed:5.1f}s', f'sent={sent}', f'answered={len(log)}',
             f'rate={len(recent):4d}/s', f'lat={latency * 1e3:5.2f}ms']
    if tips and tips[0] in poses:
        p = poses[tips[0]].pose.position
        parts.append(f'{tips[0]}=({p.x:+.3f},{p.y:+.3f},{p.z:+.3f})m')
    parts.append('tau_g=[' + ' '.join(f'{x:+6.1f}' for x in tau[:7]) + ']')
    if feedforward:
        parts.append('tau_ff=[' + ' '.join(f'{x:+6.1f}' for x in feedforward[-1][:7]) + '] Nm')
    print('  '.join(parts), flush=True)


def _plot(model, log, planned, folder):
    try:
        import matplotlib
        matplotlib.use('Agg')
        import matplotlib.pyplot as plt
    except ImportError:
        print('[demo] matplotlib is not installed: no plot')
        return None
    os.makedirs(folder, exist_ok=True)
    fig, axes = plt.subplots(2, 1, figsize=(9, 7), dpi=110, sharex=True)
    if planned:
        traj = planned[-1]
        t = np.array([p.time_from_start.sec + p.time_from_start.nanosec * 1e-9
                      for p in traj.points])
        effort = np.array([list(p.effort) for p in traj.points])
        for i, name in enumerate(traj.joint_names):
            axes[0].plot(t, effort[:, i], label=name)
        axes[0].set_title(f'{model.name}: inverse-dynamics feedforward along the trajectory '
                          '(feedforward_trajectory)')
    t = np.array([e[0] for e in log]) - log[0][0]
    tau = np.array([e[3] for e in log])
    for i, name in enumerate(model.joint_names):
        axes[1].plot(t, tau[:, i], label=name)
    axes[1].set_title('gravity torques answering the joint states (gravity_torques)')
    axes[1].set_xlabel('time [s]')
    for ax in axes:
        ax.set_ylabel('torque [N m]')
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7, ncol=3)
    fig.tight_layout()
    path = os.path.join(folder, 'torques.png')
    fig.savefig(path)
    plt.close(fig)
    return path


if __name__ == '__main__':
    sys.exit(main())
