"""Faults in the closed loop, across processes: the demo arm simulated by MuJoCo (``sim_node``,
not in lockstep: the simulation runs on whatever the node does), held by ``dynamics_node``'s
``gravity_command`` alone, with a faulty link between the simulation's joint states and the
node (``fault_relay.py``, its own process): states dropped for 200 ms, delayed by 50 ms (within
``command.max_state_age``, 0.1 s) and by 150 ms (beyond it), sent in bursts; then the robot
description swapped on its topic and the simulation reset (``/clock`` back to zero) while
states are delayed, so that states of before the reset reach the node after it.

Each command is traced to the joint state it was computed from by DDS source timestamps: the
node publishes that state's stamped ``gravity_torques`` just before the command, and the
simulation's own states say what the simulated time was when the command left the node.
"""
import os
import subprocess
import sys

import numpy as np
import pytest
from robots import DEMO_ARM, load

rclpy = pytest.importorskip('rclpy', reason='ROS 2 (rclpy) is part of make env')
from closed_loop import processes, wait_sim_time  # noqa: E402
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus  # noqa: E402
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy  # noqa: E402
from ros_helpers import client_node, spin_until  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from std_msgs.msg import Float64MultiArray, String  # noqa: E402
from std_srvs.srv import Trigger  # noqa: E402

from ros_dynamics.closed_loop import (  # noqa: E402
    StateRecorder,
    dynamics_args,
    random_configuration,
    sim_args,
)

NS = 'loop_faults'
#: Simulated seconds per wall second: 10 ms of wall time per 1 ms step, so that the ages
#: measured are the faults', not a loaded machine's.
REAL_TIME_FACTOR = 0.1
#: The node's bound (command.max_state_age, its default) [s].
MAX_STATE_AGE = 0.1
#: What the node's clock may lag the simulation's when a command leaves it [s] (the /clock
#: message is taken after the joint states queued with it; 10 ms of simulated time is 100 ms
#: of wall time here).
CLOCK_LAG = 0.01
#: The faults, in order: (order to the relay, simulated seconds it lasts).
PHASES = [('pass', 0.3), ('drop 0.2', 0.5), ('delay 0.05', 0.5), ('pass', 0.2),
          ('delay 0.15', 0.35), ('pass', 0.3), ('burst 20', 0.5), ('pass', 0.3)]


def stamp_s(stamp):
    return stamp.sec + 1e-9 * stamp.nanosec


class Trace:
    """Source timestamps [ns] of the simulation's states, the node's gravity torques and its
    commands; the simulated stamps [s] of the first two.
    """

    def __init__(self, node):
        self.states, self.torques, self.commands = [], [], []
        node.create_subscription(JointState, f'/{NS}/joint_states', lambda m, info: (
            self.states.append((info['source_timestamp'], stamp_s(m.header.stamp)))), 1000)
        node.create_subscription(JointState, f'/{NS}/gravity_torques', lambda m, info: (
            self.torques.append((info['source_timestamp'], stamp_s(m.header.stamp)))), 1000)
        node.create_subscription(Float64MultiArray, f'/{NS}/sim/commands', lambda m, info: (
            self.commands.append(info['source_timestamp'])), 1000)

    def commanded(self):
        """Per command: when it left the node [ns], the stamp of the state it came from and
        the simulated time then [s] (arrays (k,)); and when the simulation's clock went back.
        """
        states, torques = np.array(sorted(self.states)), np.array(sorted(self.torques))
        left = np.sort(np.array(self.commands, dtype=float))
        passes = np.searchsorted(torques[:, 0], left, side='right') - 1
        now = np.searchsorted(states[:, 0], left, side='right') - 1
        assert np.all(passes >= 0) and np.all(now >= 0)
        reset = states[np.flatnonzero(np.diff(states[:, 1]) < 0)[0] + 1, 0]
        return left, torques[passes, 1], states[now, 1], reset


def node_status(reports):
    return [s for r in reports for s in r.status
            if s.name == f'/{NS}/ros_dynamics: dynamics']


def counter(reports, key):
    """``key`` in the node's latest diagnostics report (0 before any)."""
    status = node_status(reports)
    return int({kv.key: kv.value for kv in status[-1].values}.get(key, 0)) if status else 0


def test_the_loop_rides_through_faults_and_never_commands_from_a_stale_state(tmp_path):
    model = load(DEMO_ARM)
    joints = list(model.actuated_joint_names)
    q0 = random_configuration(model, joints, np.random.default_rng(31))
    relay = subprocess.Popen([sys.executable, os.path.join(os.path.dirname(__file__),
                                                           'fault_relay.py'), NS],
                             stdout=subprocess.PIPE, text=True)
    try:
        assert relay.stdout.readline().strip() == 'ready'
        with client_node('loop_faults_client') as ros:
            recorder = StateRecorder(ros, NS, joints)
            trace = Trace(ros)
            reports = []
            ros.create_subscription(DiagnosticArray, '/diagnostics', reports.append, 100)
            fault = ros.create_publisher(String, f'/{NS}/fault', 10)
            description = ros.create_publisher(String, f'/{NS}/robot_description', QoSProfile(
                depth=1, reliability=ReliabilityPolicy.RELIABLE,
                durability=DurabilityPolicy.TRANSIENT_LOCAL))
            with processes(str(tmp_path), ('sim', 'sim_node', *sim_args(
                    NS, DEMO_ARM, joints, q0, REAL_TIME_FACTOR, 'lockstep_timeout:=0.0'))) as p, \
                    processes(str(tmp_path), ('dynamics', 'dynamics_node', *dynamics_args(
                        NS, DEMO_ARM, joints, 'tool0', 'gravity_command:=sim/commands',
                        'joint_states:=faulty/joint_states'))) as d:
                assert spin_until(ros, lambda: recorder.first_commanded() is not None, 60.0), \
                    (p['sim'].output(), d['dynamics'].output())
                # This process hears the commands too (its subscriptions matched) before the
                # faults begin.
                assert spin_until(ros, lambda: len(trace.commands) >= 100, 60.0)
                windows = []
                for order, duration in PHASES:
                    fault.publish(String(data=order))
                    start = recorder.now
                    assert wait_sim_time(ros, recorder, start + duration, 120.0)
                    windows.append((order, start, recorder.now))
                # The description swapped (the same robot under another name), then the
                # simulation reset: /clock back to zero, the arm back at q0, command zero.
                swapped = open(DEMO_ARM).read().replace('<robot name="demo_arm">',
                                                        '<robot name="demo_arm_swapped">')
                description.publish(String(data=swapped))
                start = recorder.now
                assert wait_sim_time(ros, recorder, start + 0.5, 120.0)
                windows.append(('swap', start, recorder.now))
                # The reset with states in flight: delayed by 50 ms across it, so that states
                # of before it reach the node after /clock went back (stamped seconds ahead).
                fault.publish(String(data='delay 0.05'))
                assert wait_sim_time(ros, recorder, recorder.now + 0.2, 120.0)
                stale_before = counter(reports, 'stale_states')
                reset_at = recorder.now
                reset = ros.create_client(Trigger, f'/{NS}/sim/reset_simulation')
                assert reset.wait_for_service(timeout_sec=10.0)
                future = reset.call_async(Trigger.Request())
                rclpy.spin_until_future_complete(ros, future, timeout_sec=10.0)
                assert future.result().success
                assert spin_until(ros, lambda: 0.2 <= recorder.now < reset_at, 120.0)
                fault.publish(String(data='pass'))
                assert spin_until(ros, lambda: 1.0 <= recorder.now < reset_at, 120.0)
                spin_until(ros, lambda: False, 1.5)      # the last diagnostics report
                dynamics_log = d['dynamics'].output()
            t, q, _, _ = recorder.arrays()
            left, state_stamps, commanded_at, reset_ns = trace.commanded()
            sent = np.array(sorted(trace.states))
    finally:
        relay.terminate()            # a fixture: its exit code says nothing of the node
        try:
            relay.wait(10.0)
        except subprocess.TimeoutExpired:    # once in a CI run it did not stop within 10 s
            relay.kill()
            relay.wait()

    age = commanded_at - state_stamps
    print(f'{len(age)} commands; oldest state commanded {age.max() * 1e3:.1f} ms old '
          f'(youngest {age.min() * 1e3:.1f} ms)')
    # Never a command from a state older than the bound, nor from one of before the reset.
    assert age.max() <= MAX_STATE_AGE + CLOCK_LAG
    assert age.min() >= -CLOCK_LAG
    # Per phase: the commands of the states stamped in it, before the reset.
    before = left < reset_ns
    sent_before = sent[sent[:, 0] < reset_ns, 1]
    for order, start, end in windows:
        inside = before & (state_stamps > start + 0.02) & (state_stamps <= end)
        states = np.count_nonzero((sent_before > start + 0.02) & (sent_before <= end))
        ages = age[inside]
        print(f'{order:>10}: {len(ages)} commands for {states} states, ages '
              f'{np.median(ages) * 1e3 if len(ages) else 0:.1f} ms median')
        if order == 'delay 0.15':
            # No command while it lasts: every state is 0.15 s old when the node gets it. At
            # its end the states held back are let through at once, the youngest (at most
            # 0.1 s old) commanded.
            during = before & (commanded_at > start + 0.02) & (commanded_at < end)
            assert np.count_nonzero(during) == 0
            assert np.all(ages <= MAX_STATE_AGE + CLOCK_LAG)
        elif order == 'drop 0.2':
            near = before & (state_stamps > start - 0.05) & (state_stamps <= end)
            stamps = np.sort(state_stamps[near])
            assert np.diff(stamps).max() >= 0.195                   # none relayed, none made up
        elif order == 'delay 0.05':
            assert np.count_nonzero(ages > 0.045) >= 100            # old, but commanded
        else:                                                       # the loop came back
            assert len(ages) >= 0.9 * states, order
    status = node_status(reports)
    counters = {kv.key: kv.value for kv in status[-1].values}
    assert int(counters['stale_states']) >= 100, counters
    assert any(s.level == DiagnosticStatus.WARN and 'max_state_age' in s.message
               for s in status)
    assert int(counters['stamps_backwards']) >= 1
    # The states in flight across the reset (about 50, stamped seconds ahead of the clock
    # gone back) were refused: none commanded (the ages above), each counted.
    print(f'stale states after the reset: {int(counters["stale_states"]) - stale_before}')
    assert int(counters['stale_states']) - stale_before >= 30
    assert "model 'demo_arm_swapped' from the robot_description topic" in dynamics_log
    # The arm stayed where it was through every fault: the last command stays applied while
    # none comes, and every command held it.
    reset_index = int(np.flatnonzero(np.diff(t) < 0)[0]) + 1
    t_before, q_before = t[:reset_index], q[:reset_index]
    drift = np.max(np.abs(q_before[t_before >= windows[0][1]] - q0))
    print(f'drift through the faults {drift * 1e3:.3f} mrad')
    assert drift <= 1e-3
    # After the reset: commanded again at once, and the arm held at q0 again.
    t_after, q_after = t[reset_index:], q[reset_index:]
    sent_after = sent[sent[:, 0] >= reset_ns, 1]
    commanded = np.count_nonzero(~before & (state_stamps > 0.02) & (state_stamps <= 1.0))
    states = np.count_nonzero((sent_after > 0.02) & (sent_after <= 1.0))
    fall = np.max(np.abs(q_after[t_after <= 1.0] - q0))
    print(f'after the reset: {commanded} commands for {states} states; the arm moved '
          f'{fall * 1e3:.3f} mrad in 1 s')
    assert commanded >= 0.9 * states
    assert fall <= 1e-3
