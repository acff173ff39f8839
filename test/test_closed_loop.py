"""The node's torques close the loop on a robot whose physics it did not compute (MuJoCo), across
processes: ``sim_node``, ``dynamics_node`` and ``effort_controller`` talk over real topics.

Simulated time: the simulation publishes ``/clock`` and every node runs with ``use_sim_time``;
the simulation runs at ``REAL_TIME_FACTOR`` of real time, its commands applied within one 1 ms
step of simulated time when they arrive within the step's wall-clock deadline (else the
simulation waits: a loaded machine slows the robot instead of breaking the loop).
"""
import numpy as np
import pytest
from robots import DEMO_ARM, PANDA, UR5, erd, load

rclpy = pytest.importorskip('rclpy', reason='ROS 2 (rclpy) is part of make env')
from closed_loop import (  # noqa: E402
    StateRecorder,
    dynamics_args,
    processes,
    random_configuration,
    reset,
    sim_args,
    wait_sim_time,
)
from ros_helpers import client_node  # noqa: E402

#: Simulated seconds per wall second in these tests (a loaded 2-core machine runs three nodes).
REAL_TIME_FACTOR = 0.5
#: Robots of the loop tests: URDF, tip.
ROBOTS = {'demo_arm': (DEMO_ARM, 'tool0'), 'ur5': (erd(UR5), 'tool0'),
          'panda': (erd(PANDA), 'panda_hand')}


@pytest.fixture(scope='module')
def ros():
    with client_node('closed_loop_client') as node:
        yield node


@pytest.mark.parametrize('robot', ['demo_arm'])
def test_gravity_command_alone_holds_the_arm_and_without_it_the_arm_falls(ros, tmp_path, robot):
    urdf, tip = ROBOTS[robot]
    model = load(urdf)
    joints = list(model.actuated_joint_names)
    q0 = random_configuration(model, joints, np.random.default_rng(23))
    ns = f'hold_{robot}'
    recorder = StateRecorder(ros, ns, joints)
    with processes(str(tmp_path),
                   ('sim', 'sim_node', *sim_args(ns, urdf, joints, q0, REAL_TIME_FACTOR))) as p:
        with processes(str(tmp_path), ('dynamics', 'dynamics_node', *dynamics_args(
                ns, urdf, joints, tip, 'gravity_command:=sim/commands'))):
            assert wait_sim_time(ros, recorder, 0.0, 60.0), p['sim'].output()
            assert spin_wait_commanded(ros, recorder), 'no gravity command reached the robot'
            released = recorder.first_commanded()
            assert wait_sim_time(ros, recorder, released + 10.0, 120.0)
        t, q, _, effort = recorder.arrays(end=released + 10.0)
        drift = np.max(np.abs(q - q0))
        assert drift <= 1e-3, f'worst drift {drift:.2e} rad over 10 s with gravity_command'
        # The same robot without the commands: reset to q0 at rest, zero torque, and it falls.
        assert reset(ros, ns).success
        assert wait_sim_time(ros, recorder, recorder.now + 0.6, 60.0)
        t, q, _, effort = recorder.arrays()
        reset_at = t[np.nonzero(np.any(effort != 0.0, axis=1))[0][-1] + 1]
        assert np.all(effort[t >= reset_at] == 0.0)   # nothing commanded any more
        free = (t >= reset_at) & (t <= reset_at + 0.5)
        fall = np.max(np.abs(q[free] - q0))
        assert fall > 0.1, f'without commands the arm moved only {fall:.3f} rad in 0.5 s'
    print(f'{robot}: hold drift {drift * 1e3:.2e} mrad over 10 s; without commands '
          f'{fall:.2f} rad in 0.5 s')


def spin_wait_commanded(node, recorder, timeout=60.0):
    from ros_helpers import spin_until
    return spin_until(node, lambda: recorder.first_commanded() is not None, timeout)
