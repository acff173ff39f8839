"""Soak test of dynamics_node: joint states at a fixed rate for minutes, 1 % of them bad.

    make soak                                   # 1 kHz for 10 minutes (SOAK_ARGS to change)
    python benchmarks/soak.py --rate 1000 --seconds 600 --output benchmarks/results

Bad messages alternate between arrays of different lengths and NaN positions; the node must
drop every one of them and answer the good ones. Reports good messages answered and lost
(must be 0), bad ones answered (must be 0), latency per minute (p50/p99) and the node's memory
every 10 s, as soak.md and soak.json.
"""
import argparse
import json
import os
import signal
import subprocess
import sys
import sysconfig
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from run import ROBOTS, erd, load, settle  # noqa: E402


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--rate', type=float, default=1000.0, help='joint states per second')
    parser.add_argument('--seconds', type=float, default=600.0)
    parser.add_argument('--bad-fraction', type=float, default=0.01)
    parser.add_argument('--output', default=os.path.join(HERE, 'results'))
    args = parser.parse_args(argv)
    import psutil
    import rclpy
    from sensor_msgs.msg import JointState

    path = erd(ROBOTS['panda'][0])
    model = load(path)
    node = subprocess.Popen([os.path.join(sysconfig.get_paths()['scripts'], 'dynamics_node'),
                             '--ros-args', '-p', f'urdf_file:={path}',
                             '-p', 'tip_frames:=[panda_hand_tcp]'],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    rclpy.init()
    client = rclpy.create_node('soak_client')
    sent_good, sent_bad, answers = {}, set(), []
    bad_answered = [0]

    def on_msg(msg):
        key = (msg.header.stamp.sec, msg.header.stamp.nanosec)
        t = sent_good.pop(key, None)
        if t is not None:
            answers.append((t, time.perf_counter() - t))
        elif key in sent_bad:
            bad_answered[0] += 1

    client.create_subscription(JointState, 'gravity_torques', on_msg, 1000)
    pub = client.create_publisher(JointState, 'joint_states', 1000)
    names = list(model.joint_names)
    msg = JointState(name=names, position=[0.1] * model.nq)
    # Five seconds at the rate first (answers not counted): the soak judges the steady state.
    settle(rclpy, client, pub, msg, sent_good, lambda: answers, args.rate, 5.0)
    answers.clear()
    sent_good.clear()
    proc = psutil.Process(node.pid)
    memory = []
    rng = np.random.default_rng(0)
    period = 1.0 / args.rate
    start = time.perf_counter()
    count = good = bad = 0
    next_memory = start
    while time.perf_counter() - start < args.seconds:
        target = start + count * period
        while time.perf_counter() < target:
            rclpy.spin_once(client, timeout_sec=0)
        now = time.perf_counter()
        if now >= next_memory:
            memory.append((now - start, proc.memory_info().rss / 2 ** 20))
            next_memory += 10.0
        out = JointState(name=names, position=rng.uniform(-1, 1, model.nq).tolist())
        out.header.stamp = client.get_clock().now().to_msg()
        key = (out.header.stamp.sec, out.header.stamp.nanosec)
        if rng.random() < args.bad_fraction:
            if bad % 2:
                out.position = out.position[:-1]
            else:
                out.position[0] = float('nan')
            sent_bad.add(key)
            bad += 1
        else:
            sent_good[key] = time.perf_counter()
            good += 1
        pub.publish(out)
        count += 1
    end = time.perf_counter() + 2.0
    while time.perf_counter() < end:
        rclpy.spin_once(client, timeout_sec=0.01)
    memory.append((time.perf_counter() - start, proc.memory_info().rss / 2 ** 20))
    node.send_signal(signal.SIGINT)
    exit_code = node.wait(15)
    client.destroy_node()
    rclpy.try_shutdown()

    minutes = []
    for m in range(int(np.ceil(args.seconds / 60))):
        lat = [d for t, d in answers if m * 60 <= t - start < (m + 1) * 60]
        if lat:
            minutes.append({'minute': m + 1, 'answered': len(lat),
                            'p50_ms': float(np.median(lat) * 1e3),
                            'p99_ms': float(np.percentile(lat, 99) * 1e3)})
    result = {'rate_hz': args.rate, 'seconds': args.seconds, 'good_sent': good,
              'good_answered': len(answers), 'bad_sent': bad, 'bad_answered': bad_answered[0],
              'node_exit_code': exit_code, 'minutes': minutes, 'memory_mb': memory}
    os.makedirs(args.output, exist_ok=True)
    with open(os.path.join(args.output, 'soak.json'), 'w') as f:
        json.dump(result, f, indent=1)
    lines = [f'# Soak: panda joint states at {args.rate:g} Hz for {args.seconds:g} s, '
             f'{100 * args.bad_fraction:g} % bad', '',
             f'- good messages answered: {len(answers)} of {good}, lost {good - len(answers)} '
             '(must be 0)',
             f'- bad messages answered: {bad_answered[0]} of {bad} (must be 0)',
             f'- node memory: {memory[0][1]:.1f} MB at start, {memory[-1][1]:.1f} MB at the end,'
             f' max {max(m for _, m in memory):.1f} MB',
             f'- node exit code on SIGINT: {exit_code}', '',
             '| minute | answered | p50 ms | p99 ms |', '|---|---|---|---|']
    lines += [f'| {x["minute"]} | {x["answered"]} | {x["p50_ms"]:.2f} | {x["p99_ms"]:.2f} |'
              for x in minutes]
    with open(os.path.join(args.output, 'soak.md'), 'w') as f:
        f.write('\n'.join(lines) + '\n')
    print('\n'.join(lines[:6]))
    return 0 if len(answers) == good and bad_answered[0] == 0 and exit_code == 0 else 1


if __name__ == '__main__':
    sys.exit(main())
