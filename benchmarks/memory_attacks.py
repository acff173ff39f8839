"""Memory of dynamics_node after huge inputs, with and without its process settings.

    make memory                                   # the attacks below, both ways (MEMORY_ARGS)
    python benchmarks/memory_attacks.py --output benchmarks/results [--quick]

One node process on the demo arm per setting: as shipped (Fast DDS readers that free samples,
the system allocator, glibc thresholds pinned, free pages returned once a second), and with all
of that turned off the way a user would (``RMW_FASTRTPS_USE_QOS_FROM_XML=0``,
``PYTHONMALLOC=pymalloc``, ``GLIBC_TUNABLES``). Each attack in turn: the node's RSS before, its
peak, and after the node has refused the input, answered a good joint state and ticked (the
goal: back within 10 % of before). Attacks: joint states of 10^6 unknown names (x4), a
trajectory of 10^6 points, compute_fk with 10^6 frames, solve_ik with 10^6 active joints.
Writes memory.md and memory.json.
"""
import argparse
import json
import os
import sys
import tempfile
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(REPO, 'test'))
from robots import DEMO_ARM  # noqa: E402
from ros_helpers import NodeProcess, rss_mb, spin_until  # noqa: E402

#: Environment a user would set to turn the node's memory settings off.
WITHOUT = {'RMW_FASTRTPS_USE_QOS_FROM_XML': '0', 'PYTHONMALLOC': 'pymalloc',
           'GLIBC_TUNABLES': 'glibc.malloc.check=0'}
Q = [0.2, -0.7, 0.9, 0.1, 0.3, 0.0]


class Peak:
    """The largest RSS of a process, sampled every 10 ms on a thread."""

    def __init__(self, pid):
        self.pid, self.value, self._stop = pid, 0.0, threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self):
        while not self._stop.wait(0.01):
            self.value = max(self.value, rss_mb(self.pid))

    def stop(self):
        """Stop sampling; the peak [MB]."""
        self._stop.set()
        self._thread.join()
        return self.value


class Attacker:
    """A client of one node process: good joint states, and the huge inputs."""

    def __init__(self, rclpy, node, ns):
        from sensor_msgs.msg import JointState
        from trajectory_msgs.msg import JointTrajectory

        from ros_dynamics_interfaces.srv import ComputeFK, SolveIK
        self.rclpy, self.node = rclpy, node
        self.JointState, self.JointTrajectory = JointState, JointTrajectory
        self.ComputeFK, self.SolveIK = ComputeFK, SolveIK
        self.answered = set()
        node.create_subscription(JointState, f'/{ns}/gravity_torques',
                                 lambda m: self.answered.add(m.header.stamp.sec), 100)
        self.states = node.create_publisher(JointState, f'/{ns}/joint_states', 100)
        self.trajectories = node.create_publisher(JointTrajectory, f'/{ns}/joint_trajectory', 10)
        self.fk = node.create_client(ComputeFK, f'/{ns}/ros_dynamics/compute_fk')
        self.ik = node.create_client(SolveIK, f'/{ns}/ros_dynamics/solve_ik')
        self.stamp = 0
        self.names = ['shoulder_pan_joint', 'shoulder_lift_joint', 'elbow_joint',
                      'wrist_1_joint', 'wrist_2_joint', 'wrist_3_joint']

    def good(self, timeout=60.0):
        """Publish a good joint state until answered (after any backlog of huge ones)."""
        self.stamp += 1
        msg = self.JointState(name=self.names, position=Q)
        msg.header.stamp.sec = self.stamp
        return spin_until(self.node, lambda: self.stamp in self.answered, timeout,
                          lambda: self.states.publish(msg))

    def names_state(self, size, bursts):
        """``bursts`` joint states of ``size`` unknown names, each sent until answered."""
        for burst in range(bursts):
            msg = self.JointState(name=[f'ghost_{burst}_{i}' for i in range(size)] + self.names,
                                  position=[0.0] * size + Q)
            msg.header.stamp.sec = 1_000_000 + self.stamp + burst
            stamp = msg.header.stamp.sec
            for _ in range(200):       # best effort: a message of tens of MB is often lost
                self.states.publish(msg)
                if spin_until(self.node, lambda s=stamp: s in self.answered, 0.3):
                    break

    def trajectory(self, size):
        """A trajectory of ``size`` points (refused: more than trajectory.max_points)."""
        from builtin_interfaces.msg import Duration
        from trajectory_msgs.msg import JointTrajectoryPoint
        msg = self.JointTrajectory(joint_names=self.names[:1])
        msg.points = [JointTrajectoryPoint(positions=[0.0], time_from_start=Duration(
            sec=i // 1000, nanosec=(i % 1000) * 1_000_000)) for i in range(size)]
        self.trajectories.publish(msg)
        self.trajectories.publish(msg)     # best effort: one of the two gets through, mostly

    def call(self, client, request):
        """The error code of a service call, or None without an answer."""
        client.wait_for_service(timeout_sec=20.0)
        future = client.call_async(request)
        spin_until(self.node, future.done, 60.0)
        return future.result().error_code if future.done() else None

    def fk_frames(self, size):
        """compute_fk asking for ``size`` frames."""
        return self.call(self.fk, self.ComputeFK.Request(frames=[f'f{i}' for i in range(size)]))

    def ik_joints(self, size):
        """solve_ik naming ``size`` active joints."""
        request = self.SolveIK.Request(active_joints=[f'j{i}' for i in range(size)])
        request.target.pose.orientation.w = 1.0
        return self.call(self.ik, request)


def run_setting(rclpy, label, environ, size, log_dir):
    """Every attack against one fresh node process started with ``environ``."""
    ns = f'memory_{label.split()[0]}'
    saved = dict(os.environ)
    os.environ.update(environ)
    try:
        node = NodeProcess('dynamics_node', '-r', f'__ns:=/{ns}', '-p', f'urdf_file:={DEMO_ARM}',
                           '-p', 'ik.seed_samples:=0',
                           log_path=os.path.join(log_dir, f'memory_{ns}.log'))
    finally:
        os.environ.clear()
        os.environ.update(saved)
    client = rclpy.create_node(f'{ns}_client')
    attacker = Attacker(rclpy, client, ns)
    rows = []
    try:
        assert attacker.good(), node.output()
        spin_until(client, lambda: False, 3.0)
        attacks = [(f'4 joint states of {size:,} unknown names',
                    lambda: attacker.names_state(size, 4)),
                   (f'a trajectory of {size:,} points', lambda: attacker.trajectory(size)),
                   (f'compute_fk with {size:,} frames', lambda: attacker.fk_frames(size)),
                   (f'solve_ik with {size:,} active joints', lambda: attacker.ik_joints(size))]
        for name, attack in attacks:
            attacker.good()
            before = rss_mb(node.proc.pid)
            peak = Peak(node.proc.pid)
            attack()
            answered = attacker.good(120.0)      # the node read the input and what was queued
            spin_until(client, lambda: False, 5.0)   # copies still arriving; the 1 Hz tick
            answered = attacker.good() and answered
            after = rss_mb(node.proc.pid)
            rows.append({'attack': name, 'before_mb': before, 'peak_mb': peak.stop(),
                         'after_mb': after, 'ratio': after / before,
                         'good_answered': bool(answered), 'alive': node.proc.poll() is None})
            print(f'[memory] {label}: {name}: {before:.0f} -> {after:.0f} MB', flush=True)
    finally:
        client.destroy_node()
        code = node.stop()
    return {'setting': label, 'environment': environ, 'exit_code': code, 'attacks': rows}


def report(results, output):
    lines = ['# Memory of dynamics_node after huge inputs', '',
             'Demo arm, one node process per setting, attacks in turn (benchmarks/'
             'memory_attacks.py). RSS of the node before the attack, its peak, and after the '
             'node refused it and answered a good joint state again; goal: after within 10 % of '
             'before. "without" turns the node\'s memory settings off by environment: ' +
             ', '.join(f'`{k}={v}`' for k, v in WITHOUT.items()) + '.', '',
             '| attack | setting | before MB | peak MB | after MB | after / before | good '
             'answered |', '|---|---|---|---|---|---|---|']
    attacks = [row['attack'] for row in results[0]['attacks']]
    for attack in attacks:
        for setting in results:
            for row in setting['attacks']:
                if row['attack'] == attack:
                    lines.append(f"| {attack} | {setting['setting']} | {row['before_mb']:.1f} | "
                                 f"{row['peak_mb']:.1f} | {row['after_mb']:.1f} | "
                                 f"{row['ratio']:.2f} | {row['good_answered']} |")
    lines += ['', 'Exit codes after SIGINT: ' + ', '.join(
        f"{s['setting']} {s['exit_code']}" for s in results) + '.', '']
    os.makedirs(output, exist_ok=True)
    with open(os.path.join(output, 'memory.md'), 'w') as f:
        f.write('\n'.join(lines))
    with open(os.path.join(output, 'memory.json'), 'w') as f:
        json.dump({'results': results, 'load': os.getloadavg()}, f, indent=1)
    print(f'[memory] wrote {output}/memory.md, memory.json', flush=True)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--quick', action='store_true', help='10^4 instead of 10^6 (a smoke run)')
    parser.add_argument('--output', default=os.path.join(HERE, 'results'))
    args = parser.parse_args(argv)
    import rclpy
    size = 10_000 if args.quick else 1_000_000
    rclpy.init()
    try:
        logs = tempfile.mkdtemp(prefix='memory_attacks_')     # the node logs
        results = [run_setting(rclpy, 'as shipped', {}, size, logs),
                   run_setting(rclpy, 'without', WITHOUT, size, logs)]
    finally:
        rclpy.try_shutdown()
    report(results, args.output)
    failed = [row for s in results for row in s['attacks']
              if not (row['good_answered'] and row['alive'])] or \
        [s for s in results if s['exit_code'] != 0]
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
