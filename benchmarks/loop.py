"""The closed loop on MuJoCo, per robot: the demo's phases (:mod:`ros_dynamics.demo`) and the
loop's latency beside the echo node's.

Per robot, each phase its own processes (``sim_node``, ``dynamics_node``, for tracking
``effort_controller``), in lockstep at half of real time:

- *hold*: ``gravity_command`` alone for 10 s from a random configuration, the worst drift;
- *track*: a 5 s trajectory 0.6 of the way to the farther limits, RMS error of PD +
  ``feedforward_command`` over that of PD + ``gravity_command`` (same gains);
- *push*: 20 N on the tip for 0.4 s after the trajectory, ``wrench_estimates/<tip>`` 200 ms in
  against the force applied, and when ``collision`` rose;
- *payload*: 1.5 kg 5 cm off the tool axis attached in the simulation while PD + the node's
  feedforward hold the arm, ``~/identify_payload`` over the documented 10 s excitation
  (applied), the mass and center-of-mass errors and the hold's error before and after
  (``demo.payload_phase``, as the tests run it).

The latency: the simulation at 1 kHz in real time (not in lockstep), the node commanding it on
``gravity_command``; from each state's publication (its DDS source timestamp) to the reception of
the ``gravity_torques`` stamped with it, and the same through the echo node (a bare rclpy node
republishing the joint states: the floor rclpy sets), each alone beside the simulation.
"""
import argparse
import os
import subprocess
import sys
import sysconfig
import tempfile
import time

import numpy as np

from ros_dynamics import closed_loop as loop
from ros_dynamics import demo

HERE = os.path.dirname(os.path.abspath(__file__))
#: Seconds of the latency runs (wall time, 1 kHz).
LATENCY_SECONDS = 10.0


def measure(urdf, tip, folder):
    """The figures of one robot (a dict; a phase that fails gives its error instead)."""
    import rclpy

    from ros_dynamics.engine import RobotModel
    model = RobotModel.from_urdf_file(urdf)
    joints = list(model.actuated_joint_names)
    rng = np.random.default_rng(7)
    q0 = loop.random_configuration(model, joints, rng, margin=0.5)
    excursion = loop.excursion_near_limits(model, joints, q0, fraction=0.6)
    kp, kd = loop.gains(model, joints, excursion.configurations())
    args = argparse.Namespace(hold=10.0, duration=5.0, output=folder)
    out = {'joints': len(joints), 'tip': tip}
    client = rclpy.create_node('bench_loop')
    try:
        try:
            out['hold_drift_mrad'] = 1e3 * demo.hold_phase(client, args, urdf, joints, tip, q0)
        except TimeoutError as err:
            out['hold_drift_mrad'] = f'n/a: {err}'
        try:
            tracked = demo.track_phase(client, args, urdf, model, joints, tip, q0, kp, kd,
                                       excursion, True)
            baseline = demo.track_phase(client, args, urdf, model, joints, tip, q0, kp, kd,
                                        excursion, False)
            out['track_rms_mrad'] = [1e3 * tracked['rms'], 1e3 * baseline['rms']]
            out['track_ratio'] = tracked['rms'] / baseline['rms']
            _, _, _, error, angle, delay = demo.push_figures(model, tip, tracked)
            out['push'] = {'force_error_percent': None if error is None else 100 * error,
                           'direction_error_deg': angle,
                           'flag_after_ms': None if delay is None else 1e3 * delay,
                           'free_tracking_flags': int(sum(tracked['free_flags']))}
        except TimeoutError as err:
            out['track_ratio'] = f'n/a: {err}'
        try:
            found = demo.payload_phase(client, folder, urdf, model, joints, tip, q0,
                                       ns='bench_payload')
            out['payload'] = {
                'mass_error_percent': 100 * abs(found['mass'] / demo.PAYLOAD_MASS - 1),
                'com_error_mm': 1e3 * float(np.linalg.norm(found['com'] - demo.PAYLOAD_COM)),
                'hold_mrad': [1e3 * found['before'], 1e3 * found['after']]}
        except TimeoutError as err:
            out['payload'] = f'n/a: {err}'
        out['latency'] = {who: latency(client, urdf, joints, tip, q0, who, folder)
                          for who in ('ours', 'echo')}
    finally:
        client.destroy_node()
    return out


def latency(client, urdf, joints, tip, q0, who, folder):
    """Latency figures [ms] of ``who`` ('ours' or 'echo') beside the simulation in real time:
    p50, p99 and max from a state's publication to its gravity_torques' reception, the states
    published and the share answered; for ours, the share commanded (the robot is released
    and held by the commands; the echo node's answers command nothing, the brakes stay on).
    """
    from sensor_msgs.msg import JointState
    from std_msgs.msg import Float64MultiArray
    ns = f'bench_latency_{who}'
    sent, answered, commands = {}, {}, [0]

    def stamp_ns(msg):
        return msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec

    subs = [client.create_subscription(
                JointState, f'/{ns}/joint_states',
                lambda m, info: sent.__setitem__(stamp_ns(m), info['source_timestamp']), 2000),
            client.create_subscription(
                JointState, f'/{ns}/gravity_torques',
                lambda m, info: answered.__setitem__(stamp_ns(m), info['received_timestamp']),
                2000),
            client.create_subscription(Float64MultiArray, f'/{ns}/sim/commands',
                                       lambda m: commands.__setitem__(0, commands[0] + 1), 2000)]
    sim = ('sim', 'sim_node', *loop.sim_args(ns, urdf, joints, q0, 1.0,
                                             'lockstep_timeout:=0.0'))
    scripts = sysconfig.get_paths()['scripts']
    if who == 'ours':
        node_cmd = [os.path.join(scripts, 'dynamics_node'), '--ros-args', *loop.dynamics_args(
            ns, urdf, joints, tip, 'gravity_command:=sim/commands')]
    else:
        node_cmd = [sys.executable, os.path.join(HERE, 'echo_node.py'), '--ros-args', '-r',
                    f'__ns:=/{ns}']
    node = subprocess.Popen(node_cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        with demo.Phase(folder, sim):
            demo.spin_until(client, lambda: len(answered) > 100, 60.0)
            sent.clear()
            answered.clear()
            commands[0] = 0
            demo.spin_until(client, lambda: False, LATENCY_SECONDS)
    finally:
        node.send_signal(2)
        try:
            node.wait(10)
        except subprocess.TimeoutExpired:
            node.kill()
        for sub in subs:
            client.destroy_subscription(sub)
    # The states of the window whose answers could have come in it (the last 0.1 s aside).
    window = sorted(sent)[:-100]
    lat = np.array([(answered[s] - sent[s]) * 1e-6 for s in window if s in answered])
    out = {'states': len(window), 'answered': len(lat) / max(len(window), 1)}
    if who == 'ours':
        out['commanded'] = commands[0] / max(len(sent), 1)
    if len(lat):
        out.update(p50_ms=float(np.median(lat)), p99_ms=float(np.percentile(lat, 99)),
                   max_ms=float(lat.max()))
    print(f'[bench] loop latency {who}: {out}', flush=True)
    return out


def bench_loop(robots):
    """``robots``: name -> (URDF path, tip). Each measured in turn (see the module docstring)."""
    import rclpy
    rclpy.init()
    results = {}
    try:
        for name, (urdf, tip) in robots.items():
            with tempfile.TemporaryDirectory(prefix='ros_dynamics_loop_') as folder:
                started = time.monotonic()
                results[name] = measure(urdf, tip, folder)
                results[name]['wall_s'] = time.monotonic() - started
            print(f'[bench] loop on {name} done: {results[name]}', flush=True)
    finally:
        rclpy.try_shutdown()
    return results
