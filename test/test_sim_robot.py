"""The MuJoCo model of a URDF (ros_dynamics.sim.robot) against our engine: the same inertials,
the same gravity (MuJoCo's ``qfrc_bias`` at rest), with and without a payload, mimic joints
followed, pushes where they are asked for, and every bad input refused with a typed error.
"""
import warnings

import numpy as np
import pytest
from robots import DEMO_ARM, PANDA, TALOS, UR5, erd, load

from ros_dynamics.engine import Payload
from ros_dynamics.engine.exceptions import (
    InvalidInputError,
    UnknownFrameError,
    UnknownJointError,
    UrdfError,
)

mujoco = pytest.importorskip('mujoco', reason='mujoco is in .ci/requirements.txt')
from ros_dynamics.sim.robot import SimulatedRobot  # noqa: E402

ROBOTS = {'demo_arm': DEMO_ARM, 'ur5': erd(UR5), 'panda': erd(PANDA), 'talos': erd(TALOS)}


def _pair(name, **options):
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        model = load(ROBOTS[name])
        with open(ROBOTS[name]) as f:
            return model, SimulatedRobot(f.read(), **options)


def _random_state(model, sim, rng):
    q = rng.uniform(np.maximum(model.lower_limits, -3.0), np.minimum(model.upper_limits, 3.0))
    sim.set_state([q[model.q_names.index(j)] for j in sim.joints], sim.joints)
    return sim.positions(list(model.q_names))


@pytest.mark.parametrize('name', sorted(ROBOTS))
def test_mujoco_gravity_at_rest_equals_the_engines(name):
    model, sim = _pair(name)
    assert sorted(sim.joints) == sorted(model.actuated_joint_names)
    columns = [model.v_names.index(j) for j in sim.joints]
    rng = np.random.default_rng(3)
    for _ in range(5):
        q = _random_state(model, sim, rng)
        expected = model.gravity_torques(q)[columns]
        np.testing.assert_allclose(sim.gravity_torques(), expected, rtol=0, atol=1e-12)
    assert np.max(np.abs(expected)) > 1.0          # a comparison of real loads


@pytest.mark.parametrize('name', ['ur5', 'panda'])
def test_a_payload_attached_at_run_time_loads_gravity_as_the_engines_payload(name):
    model, sim = _pair(name)
    link = 'tool0' if name == 'ur5' else 'panda_hand'
    com = np.array([0.04, -0.03, 0.08])
    sim.set_payload(link, 1.5, com)
    model.update_settings(payloads=[Payload(link, 1.5, com)])
    columns = [model.v_names.index(j) for j in sim.joints]
    rng = np.random.default_rng(4)
    for _ in range(5):
        q = _random_state(model, sim, rng)
        np.testing.assert_allclose(sim.gravity_torques(), model.gravity_torques(q)[columns],
                                   rtol=0, atol=1e-12)
    sim.set_payload(link, 0.0, [0, 0, 0])           # removed: back to the robot alone
    model.update_settings(payloads=[])
    np.testing.assert_allclose(sim.gravity_torques(), model.gravity_torques(q)[columns],
                               rtol=0, atol=1e-12)


def test_a_mimic_joint_follows_its_leader_while_the_arm_moves():
    model, sim = _pair('panda')
    assert 'panda_finger_joint2' in sim.all_joints and 'panda_finger_joint2' not in sim.joints
    sim.set_state(np.r_[0.0, -0.5, 0.0, -2.0, 0.0, 1.5, 0.7, 0.01], sim.joints)
    assert sim.positions(['panda_finger_joint2'])[0] == 0.01
    sim.set_command(np.r_[sim.gravity_torques()[:7], 0.2])       # the arm still, a finger pushed
    for _ in range(50):
        sim.step()
    first, second = sim.positions(['panda_finger_joint1', 'panda_finger_joint2'])
    assert first - 0.01 > 5e-3                        # it moved
    # MuJoCo's equality constraints are soft: the follower lags by a few percent of the travel.
    assert abs(second - first) < 0.1 * (first - 0.01)


def test_a_push_at_a_link_accelerates_the_arm_as_jT_f_does():
    """From rest with gravity compensated, the first step's acceleration is M^-1 J^T f
    (joints without damping: MuJoCo integrates damping implicitly, which slows a light wrist's
    first step by a few percent).
    """
    model, sim = _pair('ur5', default_damping=0.0)
    q = _random_state(model, sim, np.random.default_rng(6))
    sim.set_command(sim.gravity_torques())
    f_tool = np.array([20.0, -5.0, 3.0, 0.5, 0.0, -1.0])
    sim.set_wrench('tool0', f_tool)
    p, R = sim.T_world_link('tool0')
    np.testing.assert_allclose(p, model.frame_pose(q, 'tool0')[:3, 3], atol=1e-12)
    np.testing.assert_allclose(R, model.frame_pose(q, 'tool0')[:3, :3], atol=1e-12)
    w_world = sim.applied_wrench_world()
    np.testing.assert_allclose(w_world[:3], R @ f_tool[:3], atol=1e-12)
    sim.step()
    J = model.jacobian(q, 'tool0')        # rows [linear; angular], world axes, tool origin
    qdd_expected = np.linalg.solve(model.mass_matrix(q), J.T @ w_world)
    columns = [model.v_names.index(j) for j in sim.joints]
    qdd = sim.velocities(sim.joints) / 1e-3
    np.testing.assert_allclose(qdd, qdd_expected[columns], rtol=2e-2, atol=1e-3)


@pytest.mark.parametrize('bad', [[np.nan] * 6, [np.inf] * 6, [1e300] * 6, [1.0] * 5, ['a'] * 6])
def test_bad_commands_are_refused_and_the_last_command_stays(bad):
    _, sim = _pair('demo_arm')
    sim.set_command(np.ones(6))
    with pytest.raises(InvalidInputError, match='effort command'):
        sim.set_command(bad)
    np.testing.assert_array_equal(sim.command, np.ones(6))


def test_bad_wrenches_payloads_and_names_are_refused():
    _, sim = _pair('ur5')
    with pytest.raises(UnknownFrameError, match='no_such_link'):
        sim.set_wrench('no_such_link', np.zeros(6))
    with pytest.raises(InvalidInputError, match='wrench'):
        sim.set_wrench('tool0', [np.nan, 0, 0, 0, 0, 0])
    with pytest.raises(InvalidInputError, match='fixed to the world'):
        sim.set_wrench('world', [1.0, 0, 0, 0, 0, 0])
    with pytest.raises(InvalidInputError, match='payload mass'):
        sim.set_payload('tool0', -1.0, [0, 0, 0])
    with pytest.raises(InvalidInputError, match='payload com'):
        sim.set_payload('tool0', 1.0, [0, 1e300, 0])
    with pytest.raises(UnknownJointError, match='nope'):
        sim.limits('nope')
    with pytest.raises(InvalidInputError, match='command joints'):
        sim.set_command_order(['shoulder_pan_joint', 'shoulder_pan_joint'])
    with pytest.raises(UrdfError, match='not XML'):
        SimulatedRobot('<robot')
    with pytest.raises(InvalidInputError, match='default_damping'):
        SimulatedRobot(open(DEMO_ARM).read(), default_damping=float('nan'))


def test_a_step_that_diverges_is_undone_and_the_simulation_goes_on():
    """A 10^6 N push on the wrist (accepted: the bound is on each number, not on what the
    robot's inertia takes) makes MuJoCo's accelerations blow up within a few steps: that step is
    undone (positions before it, at rest, time one step on, the push released, the command
    zeroed), with a typed error; the next steps are ordinary. MuJoCo's own reset, which sent
    the state and the clock back to the start, is off.
    """
    from ros_dynamics.sim import SimulationDiverged
    from ros_dynamics.sim.robot import MAX_SPEED, TIME_STEP
    _, sim = _pair('demo_arm')
    sim.set_state([0.3, -1.0, 1.2, 0.1, 0.5, 0.0])
    sim.set_command(np.full(6, 1.0))
    sim.set_wrench('wrist_3_link', [1e6, 0, 0, 0, 0, 0])
    for _ in range(100):
        q, t = sim.positions(), sim.time
        try:
            sim.step()
        except SimulationDiverged as err:
            assert 'step undone' in str(err)
            break
        assert np.all(np.abs(sim.velocities()) <= MAX_SPEED)
    else:
        pytest.fail('a 10^6 N push on the wrist did not diverge in 100 steps')
    np.testing.assert_array_equal(sim.positions(), q)
    np.testing.assert_array_equal(sim.velocities(), np.zeros(6))
    assert sim.time == pytest.approx(t + TIME_STEP)
    np.testing.assert_array_equal(sim.command, np.zeros(6))
    np.testing.assert_array_equal(sim.applied_wrench_world(), np.zeros(6))
    for _ in range(200):                   # at rest, held by nothing: it falls, finitely
        sim.step()
    assert np.all(np.isfinite(sim.positions())) and sim.time == pytest.approx(t + 201e-3)


@pytest.mark.parametrize('dynamics', ['damping="inf"', 'damping="nan"', 'friction="-5"',
                                      'damping="1e300"', 'friction="x"'])
def test_joint_dynamics_beyond_bounds_are_refused_naming_the_joint(dynamics):
    with open(DEMO_ARM) as f:
        text = f.read()
    text = text.replace('<dynamics damping="0.5" friction="2.0"/>', f'<dynamics {dynamics}/>', 1)
    with pytest.raises(UrdfError, match=r'joint shoulder_pan_joint: <dynamics '):
        SimulatedRobot(text, friction=True)


def test_a_urdf_mujoco_cannot_build_is_refused_in_one_line():
    text = ('<robot name="r"><link name="base"/><link name="a"><inertial><mass value="1"/>'
            '<inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial>'
            '</link><joint name="j1" type="revolute"><parent link="base"/><child link="a"/>'
            '<origin xyz="0 0 0.1" rpy="x 0 0"/><axis xyz="0 0 1"/>'
            '<limit lower="-1" upper="1" effort="1" velocity="1"/></joint></robot>')
    with pytest.raises(UrdfError, match='MuJoCo cannot build the robot') as err:
        SimulatedRobot(text)
    assert '\n' not in str(err.value)
