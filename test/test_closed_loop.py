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
    controller_args,
    dynamics_args,
    excursion_near_limits,
    processes,
    random_configuration,
    reset,
    sim_args,
    wait_sim_time,
)
from ros_helpers import client_node  # noqa: E402
from trajectory_msgs.msg import JointTrajectory  # noqa: E402

#: Simulated seconds per wall second in these tests (a loaded 2-core machine runs three nodes).
REAL_TIME_FACTOR = 0.2
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


def track(ros, tmp_path, robot, feedforward, q0, kp, kd, excursion, label):
    """RMS tracking error [rad] (all joints, 5 s) of PD + the dynamics node's feedforward, or
    of PD + gravity, on the simulated robot; and the recorder.
    """
    urdf, tip = ROBOTS[robot]
    model = load(urdf)
    joints = list(model.actuated_joint_names)
    ns = f'track_{robot}_{label}'
    recorder = StateRecorder(ros, ns, joints)
    pub = ros.create_publisher(JointTrajectory, f'/{ns}/joint_trajectory', 10)
    with processes(str(tmp_path),
                   ('sim_' + label, 'sim_node', *sim_args(ns, urdf, joints, q0,
                                                          REAL_TIME_FACTOR)),
                   ('dynamics_' + label, 'dynamics_node',
                    *dynamics_args(ns, urdf, joints, tip, parameters=('friction:=true',))),
                   ('controller_' + label, 'effort_controller',
                    *controller_args(ns, joints, kp, kd, feedforward))):
        assert spin_wait_commanded(ros, recorder, 90.0), 'the controller never commanded'
        # Settled on gravity (PD holding q0), then the trajectory, started 1 s ahead.
        assert wait_sim_time(ros, recorder, recorder.first_commanded() + 1.0, 60.0)
        start = recorder.now + 1.0
        pub.publish(excursion.message(joints, start))
        assert wait_sim_time(ros, recorder, start + excursion.duration, 120.0)
    ros.destroy_publisher(pub)
    t, q, _, _ = recorder.arrays(start, start + excursion.duration)
    q_d, _, _ = excursion(t - start)
    return float(np.sqrt(np.mean((q - q_d) ** 2))), recorder


@pytest.mark.parametrize('robot', ['demo_arm', 'ur5', 'panda'])
def test_pd_plus_feedforward_tracks_five_times_better_than_pd_plus_gravity(ros, tmp_path, robot):
    urdf, _ = ROBOTS[robot]
    model = load(urdf)
    joints = list(model.actuated_joint_names)
    q0 = random_configuration(model, joints, np.random.default_rng(7), margin=0.5)
    excursion = excursion_near_limits(model, joints, q0)
    kp, kd = gains(model, joints, q0)
    rms_ff, _ = track(ros, tmp_path, robot, True, q0, kp, kd, excursion, 'ff')
    rms_g, _ = track(ros, tmp_path, robot, False, q0, kp, kd, excursion, 'gravity')
    print(f'{robot}: RMS tracking error PD + feedforward {rms_ff * 1e3:.2f} mrad, PD + gravity '
          f'{rms_g * 1e3:.2f} mrad, ratio {rms_ff / rms_g:.3f}')
    assert rms_g > 0.01, 'the baseline tracks too well for the comparison to mean anything'
    assert rms_ff <= rms_g / 5


def model_q(model, joints, q):
    """The model's configuration with ``joints`` at ``q`` (others 0)."""
    full = np.zeros(model.nq)
    for j, value in zip(joints, q):
        full[model.q_names.index(j)] = value
    return full


def gains(model, joints, q0, frequency=2.0, least_inertia=0.05):
    """The same PD gains for both controllers: a critically damped loop of ``frequency`` [Hz] on
    each joint's inertia at ``q0`` (at least ``least_inertia`` [kg m^2], so that a wrist's loop
    is stiffer than its joint damping)."""
    inertia = np.maximum(np.diag(model.mass_matrix(model_q(model, joints, q0))), least_inertia)
    omega = 2 * np.pi * frequency
    return inertia * omega ** 2, 2 * inertia * omega
