"""Whole Cartesian paths (IKSolver.solve_path): every pose checked with Pinocchio's forward
kinematics, one branch kept, failures naming the first pose at fault.
"""
import math
import time

import numpy as np
from pinocchio_reference import Arm
import pytest
from robots import BAXTER, KINOVA, PANDA, PR2, UR5, calibrated, erd
from scipy.spatial.transform import Rotation

from ros_dynamics.engine import InvalidInputError, ShapeError, ik_path
from ros_dynamics.engine.ik_requests import MAX_PATH_POSES


@pytest.fixture(scope='module')
def ur5():
    return Arm(erd(UR5), 'tool0')


def line(T0, direction, length, n):
    """``n`` poses from ``T0`` along ``direction`` (3,) over ``length`` [m], orientation kept."""
    T = np.repeat(T0[None], n, axis=0)
    T[:, :3, 3] += np.linspace(0.0, length, n)[:, None] * direction
    return T


def random_lines(arm, count, seed):
    """``count`` pairs ``(q0, T)``: a configuration a fifth of each joint's range inside its
    limits and 100 poses 1 mm apart from its tip's pose along a random direction.
    """
    lo, hi = arm.model.sampling_lower, arm.model.sampling_upper
    rng = np.random.default_rng(seed)
    for _ in range(count):
        q0 = rng.uniform(lo + 0.2 * (hi - lo), hi - 0.2 * (hi - lo))
        d = rng.normal(size=3)
        yield q0, line(arm.pose(q0), d / np.linalg.norm(d), 0.099, 100)


def check_path(arm, Q, T, tol=1e-9):
    """Each configuration of ``Q`` puts the tip at its pose of ``T`` (Pinocchio), in limits."""
    assert len(Q) == len(T)
    for q, T_n in zip(Q, T):
        assert np.abs(arm.pose(q) - T_n).max() < tol
    assert np.all(Q >= arm.model.lower_limits) and np.all(Q <= arm.model.upper_limits)


def test_a_straight_line_is_followed_on_one_branch(ur5):
    q0 = np.array([0.3, -1.2, 1.5, -1.9, -1.5, 0.4])
    T = line(ur5.pose(q0), np.array([0.0, 0.6, -0.8]), 0.25, 200)   # 1.25 mm steps
    result = ur5.solver.solve_path('tool0', T, q0 + 0.05)
    assert result.success and result.solved == 200
    assert result.method == 'analytic three_parallel'
    check_path(ur5, result.q, T)
    # It starts on the branch the robot is on and moves smoothly: no step larger than a few
    # times the mean (a branch change would be radians).
    np.testing.assert_allclose(result.q[0], q0, atol=1e-9)
    steps = np.abs(np.diff(result.q, axis=0)).max(axis=1)
    assert steps.max() == pytest.approx(result.max_joint_step)
    assert steps.max() < 0.05 and steps.max() < 5 * steps.mean()
    assert np.all(result.position_error < 1e-9) and np.all(result.orientation_error < 1e-9)


def test_a_path_at_the_wrist_singularity_starts_where_the_robot_is(ur5):
    """The UR5 with joint 5 at 0 (axes 4 and 6 aligned, Pinocchio's Jacobian a rank short):
    straight down, the wrist stays singular all along; the path starts at the robot's own
    configuration and moves smoothly, pose by pose (the batched subproblems took one arbitrary
    point of the continuum per pose: 1.7 rad from the robot at the first pose). Sideways, joint
    5 must leave 0 and joints 4 and 6 then turn by radians within the first millimetre (each of
    the eight solutions of that pose is 1.6 rad or more away): the path stops there, naming the
    pose, and never jumps away from the robot at its start.
    """
    import pinocchio as pin
    q0 = np.array([0.3, -1.2, 1.5, -1.9, 0.0, 0.4])
    J = pin.computeFrameJacobian(ur5.ref.pm, ur5.ref.pd, ur5.ref.q(q0), ur5.frame,
                                 pin.LOCAL_WORLD_ALIGNED)
    assert np.linalg.svd(J, compute_uv=False).min() < 1e-12
    T = line(ur5.pose(q0), np.array([0.0, 0.0, -1.0]), 0.1, 100)
    result = ur5.solver.solve_path('tool0', T, q0)
    assert result.success, result.message
    np.testing.assert_array_equal(result.q[0], q0)
    check_path(ur5, result.q, T, 1e-5)
    assert np.abs(np.diff(result.q, axis=0)).max() < 0.01
    T = line(ur5.pose(q0), np.array([1.0, 0.0, 0.0]), 0.1, 100)
    every = ur5.solver.solve('tool0', T[1], q0, max_solutions=8).solutions
    assert len(every) == 8
    assert min(np.abs((q - q0 + np.pi) % (2 * np.pi) - np.pi).max() for q in every) > 1.6
    result = ur5.solver.solve_path('tool0', T, q0)
    assert not result.success and result.solved == 1
    assert result.message.startswith('pose 1: the branch must change')
    np.testing.assert_array_equal(result.q[0], q0)
    # Down again with a budget too short for the search: a failure that says so, not a
    # branch change (the subproblems' point of the continuum answers a search out of time).
    T = line(ur5.pose(q0), np.array([0.0, 0.0, -1.0]), 0.1, 100)
    result = ur5.solver.solve_path('tool0', T, q0, timeout=1e-4)
    assert not result.success and 'the time budget ran out' in result.message


def test_a_path_from_a_seed_on_its_first_pose_starts_at_the_seed(tmp_path):
    """A seed that reaches the first pose is its solution, for every family: a calibrated UR5
    near its wrist singularity (its snapped geometry's branches there tenths of a radian off:
    a review's lines started up to 3.5 rad from the robot, 6 of 40, and 2 failed), and
    Centauro's leg at a tolerance of 1e-10 (its wheel locked at 0 by its limits: the closed
    form's wheel angle came out 2e-10 off, clipped, and the path failed at pose 0).
    """
    arm = Arm(calibrated(UR5, tmp_path, 1e-3, 3e-4, 7), 'tool0')
    moved = arm.solver.chain('tool0').moved
    rng = np.random.default_rng(5)
    lo, up = arm.model.lower_limits, arm.model.upper_limits
    for offset in (0.01, -0.02, 0.04, -0.06) * 5:
        q0 = arm.random_q(rng)
        q0[moved[4]] = offset                          # joint 5 near 0: axes 4 and 6 aligned
        q1 = np.clip(q0 + 0.2 * rng.normal(size=q0.shape), lo, up)
        T = np.array([arm.pose((1 - t) * q0 + t * q1) for t in np.linspace(0, 1, 20)])
        result = arm.solver.solve_path('tool0', T, q0)
        assert result.success, result.message
        np.testing.assert_allclose(result.q[0], q0, rtol=0, atol=1e-12)
        check_path(arm, result.q, T, 1e-5)
    leg = Arm(erd('centauro_description/urdf/centauro.urdf'), 'wheel_1')
    q0 = leg.model.middle_configuration()
    q0[leg.solver.chain('wheel_1').moved] = [0.2508, 1.5339, 1.6165, -1.3313, 0.2930, 0.0]
    result = leg.solver.solve_path('wheel_1', leg.pose(q0)[None], q0,
                                   position_tolerance=1e-10, orientation_tolerance=1e-10)
    assert result.success, result.message
    np.testing.assert_array_equal(result.q[0], q0)


def centauro_leg_line(directory):
    """Centauro's leg to its wheel (the wheel free), its description calibrated (in
    ``directory``), and a 40-pose line from its configuration ``q0`` ending 2 mrad from the
    wrist singularity: ``(arm, q0, T (40, 4, 4))``.
    """
    import xml.etree.ElementTree as ET
    tree = ET.parse(erd('centauro_description/urdf/centauro.urdf'))
    for joint in tree.getroot().iter('joint'):
        if joint.get('name', '').startswith('j_wheel_'):
            joint.find('limit').set('lower', '-3')
            joint.find('limit').set('upper', '3')
    free = str(directory / 'centauro_free.urdf')
    tree.write(free)
    arm = Arm(calibrated(free, directory, 1e-3, 3e-4, 5), 'wheel_1')
    moved = arm.solver.chain('wheel_1').moved
    q0, q1 = arm.model.middle_configuration(), arm.model.middle_configuration()
    q0[moved] = [-1.2116410589924898, 1.0703306725893147, -0.6887902132282444,
                 -0.10805892199505074, 0.355819662226891, 1.0146372006981865]
    q1[moved] = [-0.8858930531934359, 1.3188413095156863, -0.6391688130119162,
                 0.09512347768958157, -0.0020685250496029206, 1.0178824652285299]
    T0, T1 = arm.pose(q0), arm.pose(q1)
    s = np.linspace(0.0, 1.0, 40)
    R0, R1 = Rotation.from_matrix(T0[:3, :3]), Rotation.from_matrix(T1[:3, :3])
    turn = (R1 * R0.inv()).as_rotvec()
    T = np.repeat(np.eye(4)[None], 40, axis=0)
    T[:, :3, :3] = (Rotation.from_rotvec(s[:, None] * turn) * R0).as_matrix()
    T[:, :3, 3] = (1 - s)[:, None] * T0[:3, 3] + s[:, None] * T1[:3, 3]
    return arm, q0, T


def test_a_calibrated_leg_follows_a_line_onto_its_wrist_singularity(tmp_path):
    """Centauro's calibrated leg: the line's last pose, which the snapped geometry's polished
    branches miss (2e-4 m and 1e-3 rad off). The snapped geometry reaches that pose exactly, so
    the path goes on pose by pose and is followed; it said 'no configuration reaches it' (a
    review's case), and then, one run in eight, that the branch must change (next test).
    """
    arm, q0, T = centauro_leg_line(tmp_path)
    assert arm.solver.family('wheel_1').snapped
    result = arm.solver.solve_path('wheel_1', T, q0)
    assert result.success, result.message
    check_path(arm, result.q, T, 1e-5)


def test_a_seed_next_to_the_wrist_singularity_converges_to_the_nearest_solution(tmp_path):
    """The last pose of that line from the path's answer before it (its fifth joint 5 mrad
    from the singularity): every solution within the tolerance needs the wrist's first and
    last joints turned, the nearest (SLSQP on Pinocchio's pose) by 0.23 rad. The seed's row
    now converges there: the damping's floor (1e-6) outweighed the Jacobian's smallest squared
    singular value (5e-9) and its steps crawled, so restarts answered, anywhere along the
    wrist's turn -- 0.1 to 0.54 rad, past the path's bound of 0.5 one run in eight.
    """
    from scipy.optimize import minimize
    arm, q0, T = centauro_leg_line(tmp_path)
    moved = arm.solver.chain('wheel_1').moved
    start = arm.solver.solve_path('wheel_1', T[:39], q0)
    assert start.success, start.message
    seed = start.q[38]
    assert abs(seed[moved[4]]) < 0.01

    pose_error = arm.pose_residual(seed, moved, T[39])
    nearest = minimize(lambda x: np.sum((x - seed[moved]) ** 2), seed[moved], method='SLSQP',
                       constraints=[{'type': 'eq', 'fun': pose_error}],
                       options={'ftol': 1e-14, 'maxiter': 200})
    assert nearest.success and np.abs(pose_error(nearest.x)).max() < 1e-9
    assert np.abs(nearest.x - seed[moved]).max() > 0.2
    for k in range(6):      # 3.5 ms of the default 5 on a slow host: the time is not the point
        result = arm.solver.solve('wheel_1', T[39], seed, max_solutions=1, rng=k, timeout=0.05)
        assert result.success, result.message
        assert np.abs(arm.pose(result.q) - T[39]).max() < 1e-5
        assert np.abs(result.q[moved] - nearest.x).max() < 0.03


def test_a_seed_at_a_limit_next_to_the_wrist_singularity_keeps_its_branch():
    """Panda, its first joint at its upper limit and its wrist (joint 6) 2.7 mrad from
    straight, asked for a pose whose nearest solution inside the limits (SLSQP on Pinocchio's
    pose) is 0.015 rad away: the answer is that one. With the damping's floor at 1e-9 the
    seed's row stepped out of its branch and the answer was 1.0 rad away (a review's case; a
    100-pose line broke at its 89th pose on it).
    """
    from scipy.optimize import minimize
    arm = Arm(erd(PANDA), 'panda_hand')
    arm.solver.prepare('panda_hand')
    moved = arm.solver.chain('panda_hand').moved
    seed = np.array([2.8973, 0.08813295199668136, -0.03196607772464401, -1.5121835111550748,
                     1.6270634887930544, -0.002670698942616705, 1.073264510567788, 0.02])
    T = np.array([[-0.23902478887532475, 0.08505123993814095, 0.9672814672514364,
                   -0.39641640752726975],
                  [-0.9429932498026448, 0.21724789911383843, -0.25212512995984876,
                   0.020569750492572793],
                  [-0.23158342153477574, -0.9724040502361189, 0.028275111929718988,
                   0.7195508531889728],
                  [0.0, 0.0, 0.0, 1.0]])

    pose_error = arm.pose_residual(seed, moved, T)
    lo, hi = arm.model.lower_limits[moved], arm.model.upper_limits[moved]
    nearest = minimize(lambda x: np.sum((x - seed[moved]) ** 2), seed[moved], method='SLSQP',
                       bounds=list(zip(lo, hi)), constraints=[{'type': 'eq', 'fun': pose_error}],
                       options={'ftol': 1e-14, 'maxiter': 300})
    assert nearest.success and np.abs(pose_error(nearest.x)).max() < 1e-9
    assert np.abs(nearest.x - seed[moved]).max() < 0.02
    for k in range(3):
        result = arm.solver.solve('panda_hand', T, seed, rng=k, timeout=0.5)
        assert result.success, result.message
        assert np.abs(arm.pose(result.q) - T).max() < 1e-5
        assert np.abs(result.q[moved] - seed[moved]).max() < 0.05


def test_a_path_out_of_reach_fails_where_its_branch_ends(ur5):
    """Straight out from the base: the elbow straightens and the path's branch leaves reach a
    pose before any branch does (the UR5's shoulder offset gives the others more reach). The
    path stops there, the poses before it solved -- checked pose by pose with every solution
    of single solves.
    """
    q0 = np.array([0.0, -1.0, 1.0, -1.5, -1.5, 0.0])
    T0 = ur5.pose(q0)
    out = T0[:3, 3] / np.linalg.norm(T0[:3, 3])
    T = line(T0, out, 1.5, 151)                                    # 1 cm steps, 1.5 m out
    result = ur5.solver.solve_path('tool0', T, q0)
    unreachable = next(n for n in range(len(T))
                       if not ur5.solver.solve('tool0', T[n], q0).success)
    branch_ends = next(
        n for n in range(1, len(T))
        if all(np.abs(q - result.q[n - 1]).max() > 0.5
               for q in ur5.solver.solve('tool0', T[n], result.q[n - 1]).solutions))
    assert 0 < branch_ends < unreachable < 150
    assert not result.success and result.solved == branch_ends
    assert f'pose {branch_ends}: the branch must change' in result.message
    check_path(ur5, result.q[:branch_ends], T[:branch_ends])
    np.testing.assert_array_equal(result.q[branch_ends:], np.repeat(
        result.q[branch_ends - 1:branch_ends], len(T) - branch_ends, axis=0))
    assert np.isnan(result.position_error[branch_ends:]).all()
    # Started on the branch that reaches furthest, the path names the first pose beyond reach.
    result = ur5.solver.solve_path('tool0', T[unreachable - 1:], q0)
    assert result.solved == 1 and 'pose 1: no configuration reaches it' in result.message


def test_a_jump_larger_than_the_bound_names_the_pose(ur5):
    q0 = np.array([0.3, -1.2, 1.5, -1.9, -1.5, 0.4])
    T = line(ur5.pose(q0), np.array([1.0, 0.0, 0.0]), 0.1, 11)     # 1 cm steps
    result = ur5.solver.solve_path('tool0', T, q0, max_joint_step=1e-3)
    assert not result.success and result.solved == 1
    assert 'pose 1: the branch must change' in result.message


def test_a_7_dof_arm_follows_a_path_with_its_last_joint_held():
    panda = Arm(erd(PANDA), 'panda_hand')
    q0 = np.array([0.0, -0.3, 0.0, -2.2, 0.0, 2.0, 0.8, 0.0])[:panda.model.nq]
    T = line(panda.pose(q0), np.array([0.0, 0.0, -1.0]), 0.15, 50)
    result = panda.solver.solve_path('panda_hand', T, q0, timeout=5.0)
    assert result.success
    assert result.method == 'analytic spherical_wrist, panda_joint7 held'
    moved = panda.solver.chain('panda_hand').moved
    assert np.all(result.q[:, moved[6]] == q0[moved[6]])
    for q, T_n in zip(result.q, T):
        T_q = panda.pose(q)
        assert np.abs(T_q[:3, 3] - T_n[:3, 3]).max() < 1e-5
    assert result.max_joint_step < 0.1


def test_a_path_with_a_continuous_witness_is_followed_within_its_bound(ur5):
    """Lines in joint space near the UR5's singular values (a joint at 0, +-pi/2 or pi) with
    every step within the bound: the path of their poses exists, so solve_path must follow it
    within the bound (whatever solution its table picks first), every pose checked with
    Pinocchio.
    """
    model, moved = ur5.model, ur5.solver.chain('tool0').moved
    rng = np.random.default_rng(5)
    followed = 0
    for _ in range(150):
        q = ur5.random_q(rng)
        x = q[moved]
        x[int(rng.integers(6))] = rng.choice([0.0, np.pi, np.pi / 2, -np.pi / 2]) + \
            rng.normal(0, 0.02)
        n, step = int(rng.integers(5, 60)), float(rng.choice([0.02, 0.05, 0.1]))
        Q = np.repeat(q[None], n, axis=0)
        Q[:, moved] = x + np.linspace(-1, 1, n)[:, None] * rng.normal(0, 0.05, 6)
        if np.any(Q < model.lower_limits) or np.any(Q > model.upper_limits) or \
                np.abs(np.diff(Q, axis=0)).max() > step:
            continue
        T = np.stack([ur5.pose(q) for q in Q])
        result = ur5.solver.solve_path('tool0', T, Q[0], max_joint_step=step)
        assert result.success, result.message
        check_path(ur5, result.q, T, 1e-8)
        assert np.abs(np.diff(result.q, axis=0)).max() <= step
        followed += 1
    assert followed >= 100


def test_a_7_dof_path_beyond_the_held_joints_reach_goes_on_numerically():
    """With Panda's last joint held where the seed has it, the other six lose the target part
    way along some lines (they pass a singular configuration of their own). The poses before
    keep that joint; the path goes on from there by the batched numerical iteration, moving it
    -- one branch, every pose checked with Pinocchio.
    """
    panda = Arm(erd(PANDA), 'panda_hand')
    model, moved = panda.model, panda.solver.chain('panda_hand').moved
    continued = 0
    for q0, T in random_lines(panda, 10, 5):
        result = panda.solver.solve_path('panda_hand', T, q0, timeout=5.0)
        if not (result.success and 'numerical' in result.method):
            continue
        continued += 1
        held = result.q[:, moved[6]]
        k = int(np.argmax(held != q0[moved[6]]))                # the first pose that moves it
        assert k >= 1 and np.all(held[:k] == q0[moved[6]])
        assert 'analytic spherical_wrist, panda_joint7 held then numerical batched' in \
            result.method
        for q, T_n in zip(result.q, T):
            assert np.abs(panda.pose(q) - T_n).max() < 1e-5
        assert np.all((result.q >= model.lower_limits) & (result.q <= model.upper_limits))
        assert np.abs(np.diff(result.q, axis=0)).max() <= 0.5
    assert continued >= 2


def test_a_7_dof_path_along_a_joint_at_its_limit_of_two_turns_is_followed():
    """xArm7's first joint at its 2 pi limit (found by a review): the held-joint path stops,
    then pose by pose the numerical search wrapped that joint a turn away ('moves a joint
    6.25', pose 41). The closed form at the previous answer's held values, then the previous
    answer iterated inside the true limits (the joint held at its limit, the other six
    making the move), follow the line to its end.
    """
    arm = Arm(erd('xarm_description/urdf/xarm7.urdf'), 'link_eef')
    arm.solver.prepare('link_eef')
    q0 = np.array([5.781981759214018, -0.2605633508177996, -0.3401454742095078,
                   -0.1001965352315259, 0.2343372894178133, -0.4911174262391238,
                   -3.193846576165348])
    d = np.array([-0.7883694606501879, -0.3647734533947685, -0.4953926939434881])
    T = line(arm.pose(q0), d, 0.049, 50)
    result = arm.solver.solve_path('link_eef', T, q0)
    assert result.success, result.message
    check_path(arm, result.q, T, 1e-5)
    assert np.abs(np.diff(result.q, axis=0)).max() <= ik_path.DEFAULT_MAX_JOINT_STEP


def test_an_arm_of_no_family_follows_lines_in_batches():
    """Baxter's arm fits no analytic family: its lines are iterated numerically, every pose of a
    block at once (the blocks' seams included: 100 poses), one branch -- each pose checked with
    Pinocchio, inside the limits, no joint moving more than the bound between poses.
    """
    baxter = Arm(erd(BAXTER), 'left_gripper')
    chain = baxter.solver.chain('left_gripper')
    batched = 0
    for q0, T in random_lines(baxter, 10, 5):
        result = baxter.solver.solve_path('left_gripper', T, q0, timeout=5.0)
        if result.method != 'numerical batched':
            continue
        batched += 1
        assert result.success and result.solved == 100
        check_path(baxter, result.q, T, tol=1e-5)
        assert np.max(np.abs(result.q[0] - q0)) < 1e-5          # the seed reaches pose 0
        steps = np.abs(np.diff(result.q[:, chain.moved], axis=0)).max(axis=1)
        assert steps.max() <= 0.5 and result.max_joint_step == pytest.approx(steps.max())
    assert batched >= 7


ALEXANDER = 'alexander_description/urdf/alexander_v1.lowerBodyOnly.urdf'
SO100 = 'so_arm_description/urdf/so100.urdf'


def test_a_leg_with_its_knee_straight_at_its_stop_follows_its_paths():
    """Alexander's leg read from the foot is solved by subproblem 6 (roots polished and checked
    on the chain). With the knee straight at its lower limit (a singular configuration: the two
    knee branches meet, a tangency that rounding tips either way), sweeps of the hip and ankle
    are followed to their end -- before, polishing stepped the exact branches with the
    least-squares ones and threw them off (joint values of 1e16), and the paths failed at the
    first pose.
    """
    arm = Arm(erd(ALEXANDER), 'LEFT_FOOT')
    chain = arm.solver.chain('LEFT_FOOT')
    assert arm.solver.family('LEFT_FOOT').name == 'three_parallel_offset'
    moved, model = chain.moved, arm.model
    knee = model.q_names.index('LEFT_KNEE_Y')
    assert model.lower_limits[knee] == 0.0
    rng = np.random.default_rng(31)
    lo, hi = model.lower_limits[moved], model.upper_limits[moved]
    for _ in range(20):
        q0 = model.middle_configuration()
        q0[moved] = rng.uniform(lo + 0.1 * (hi - lo), hi - 0.1 * (hi - lo))
        q0[knee] = 0.0
        sweep = np.zeros(model.nq)
        sweep[moved] = rng.normal(scale=0.2, size=len(moved))
        sweep[knee] = 0.0
        Q = [np.clip(q0 + t * sweep, model.lower_limits, model.upper_limits)
             for t in np.linspace(0.0, 1.0, 30)]
        T = np.array([arm.pose(q) for q in Q])
        result = arm.solver.solve_path('LEFT_FOOT', T, q0)
        assert result.success, result.message
        check_path(arm, result.q, T, 1e-5)
        assert result.max_joint_step < 0.1


def sweeps_through_zero(arm, seed, count):
    """``count`` pairs ``(Q, T)``: 40 configurations from ``-d`` to ``d`` (a random direction,
    clipped to the limits) and their tip poses.
    """
    model = arm.model
    rng = np.random.default_rng(seed)
    for _ in range(count):
        direction = rng.normal(scale=0.5, size=model.nq)
        Q = np.clip(np.linspace(-1.0, 1.0, 40)[:, None] * direction, model.lower_limits,
                    model.upper_limits)
        yield Q, np.array([arm.pose(q) for q in Q])


def test_an_arm_through_its_zero_configuration_with_two_joints_at_their_stops():
    """SO-100 (subproblem 6) moved through its zero configuration, where its shoulder lift has
    its lower limit and its elbow its upper one (0 both): each half of the sweep has one joint
    at its stop. There subproblem 6's roots put that joint 2e-9 rad past its limit; before,
    the path took that as outside the limits, went on numerically and failed at the zero
    configuration with an empty message (3 sweeps of 60 here).
    """
    arm = Arm(erd(SO100), 'jaw')
    assert arm.model.lower_limits[1] == 0.0 and arm.model.upper_limits[2] == 0.0
    for Q, T in sweeps_through_zero(arm, 5, 60):
        result = arm.solver.solve_path('jaw', T, Q[0])
        assert result.success, result.message
        assert result.method == 'analytic three_parallel_offset'
        check_path(arm, result.q, T, 1e-5)
        # The path is the sweep (no other branch through the same poses).
        np.testing.assert_allclose(result.q, Q, atol=1e-6)


@pytest.mark.parametrize('calibration', [3, 23])
def test_a_calibrated_arm_through_its_zero_configuration(calibration, tmp_path):
    """The sweeps above on SO-100 calibrated (axes 1 mrad, origins 0.3 mm off: a snapped
    geometry, its solutions polished on the true chain). Before, 3 of 100 sweeps failed with
    one calibration and 2 with another: polishing stopped at 1e-6 of the target, where the
    joint at its stop was still 2e-5 rad past it, near the straight elbow; and where the
    snapped geometry lost the branch near the singularity the batched iteration took over and
    stopped at the joints' stops -- now the path goes on pose by pose from there when the
    family has a solution for that pose.
    """
    arm = Arm(calibrated(SO100, tmp_path, 1e-3, 3e-4, calibration), 'jaw')
    for Q, T in sweeps_through_zero(arm, 4, 100):
        result = arm.solver.solve_path('jaw', T, Q[0])
        assert result.success, result.message
        check_path(arm, result.q, T, 1e-5)
        np.testing.assert_allclose(result.q, Q, atol=1e-4)


def test_a_path_starting_with_joints_at_their_stops_keeps_the_robots_branch():
    """SO-100 starting with its elbow folded at its stop and its wrist roll at its stop (a
    review's case): the sweep out of there is followed from where the robot is. Near the
    folded elbow, a tangency, subproblem 6's roots put the elbow up to 1.5e-7 rad past its
    stop; with 1e-7 of slack the path lost that branch at pose 13 and failed at pose 30.
    """
    arm = Arm(erd(SO100), 'jaw')
    model = arm.model
    end = np.array([1.390344304101065, 1.862242667798388, -2.121754694680578,
                    0.9188811771177273, 2.720209716540051, 1.0208484368165314])
    step = np.array([-0.0140941947795632, 0.02202939927510639, 0.04783366121383459,
                     0.03754708768024029, -0.01702746795870169, 0.00999243167724839])
    Q = np.clip(end - np.arange(39, -1, -1)[:, None] * step, model.lower_limits,
                model.upper_limits)
    assert Q[0, 2] == model.lower_limits[2] and Q[0, 4] == model.upper_limits[4]
    T = np.array([arm.pose(q) for q in Q])
    result = arm.solver.solve_path('jaw', T, Q[0])
    assert result.success, result.message
    check_path(arm, result.q, T, 1e-5)
    np.testing.assert_allclose(result.q, Q, atol=1e-5)


def test_a_path_leaving_the_limits_stops_there_without_searching():
    """Alexander's leg (subproblem 6) along a 3 m line: the poses soon have solutions, none
    inside the limits. The path stops there at once, saying so (a review found it searching
    that pose to the time budget and answering 'timed out').
    """
    arm = Arm(erd(ALEXANDER), 'LEFT_FOOT')
    seed = np.array([-0.1551784000039754, -0.05161309758918758, 0.5176744598948743,
                     -0.8455818682551932, 1.4883357067616492, 0.11479722648156698,
                     -0.07067480057166092, -0.32146841615180544, -0.21727775991919362,
                     -1.1063455332407952, 0.6624548427140746, 0.13672410394574164,
                     0.10905615199113672])
    direction = np.array([0.3778193262979388, -1.6437526859916085, 2.4809936847906613])
    T = line(arm.pose(seed), direction / np.linalg.norm(direction),
             np.linalg.norm(direction), 60)
    result = arm.solver.solve_path('LEFT_FOOT', T, seed)
    assert not result.success and 0 < result.solved < 60
    assert 'outside the joint limits' in result.message, result.message
    check_path(arm, result.q[:result.solved], T[:result.solved], 1e-5)


def test_a_batched_path_that_stops_says_at_which_pose_and_why(ur5):
    """The batched numerical iteration (a numerical chain's path, an approximate family's
    path from the pose it missed) names the pose it stops at: a path whose poses after the
    fifth are out of reach.
    """
    chain = ur5.solver.chain('tool0')
    q0 = np.array([0.3, -1.2, 1.5, -1.9, -1.5, 0.4])
    T = line(ur5.pose(q0), np.array([1.0, 0.0, 0.0]), 2.0, 20)     # 0.1 m steps, 2 m out
    T[:5] = line(ur5.pose(q0), np.array([1.0, 0.0, 0.0]), 0.004, 5)
    result = ik_path._batched(ur5.model, chain, T, q0, None, None, 1e-5, 1e-5, 0.5,
                              time.monotonic() + 1.0)
    assert not result.success and result.solved == 5
    assert result.message.startswith('pose 5: not reached in 8 iterations'), result.message


def test_a_batched_line_into_a_joint_limit_stops_at_the_pose_the_limit_bites():
    """Baxter's wrist pitch starting 0.02 rad inside its upper limit, the tip pushed along the
    direction that joint moves it: the poses before the limit are solved inside the limits,
    then the path fails there, naming the pose (with the poses before it solved).
    """
    baxter = Arm(erd(BAXTER), 'left_gripper')
    model = baxter.model
    w1 = model.q_names.index('left_w1')
    q0 = model.middle_configuration()
    q0[w1] = model.upper_limits[w1] - 0.02
    q1 = q0.copy()
    q1[w1] += 1e-6
    J = (baxter.pose(q1)[:3, 3] - baxter.pose(q0)[:3, 3]) / 1e-6        # Pinocchio's FK
    T = line(baxter.pose(q0), J / np.linalg.norm(J), 0.2, 201)           # 1 mm steps
    result = baxter.solver.solve_path('left_gripper', T, q0, timeout=5.0)
    assert not result.success and 0 < result.solved < 201
    assert result.message.startswith(f'pose {result.solved}:'), result.message
    check_path(baxter, result.q[:result.solved], T[:result.solved], tol=1e-5)
    assert np.abs(np.diff(result.q[:result.solved], axis=0)).max() <= 0.5
    assert result.q[result.solved - 1, w1] <= model.upper_limits[w1]


@pytest.mark.parametrize('targets, error, match', [
    (np.eye(4), ShapeError, r'\(N, 4, 4\)'),
    (np.zeros((0, 4, 4)), ShapeError, r'\(N, 4, 4\)'),
    (np.full((3, 4, 4), np.nan), InvalidInputError, 'T_targets'),
    (np.concatenate([np.repeat(np.eye(4)[None], 3, 0), [np.diag([1, 1, -1, 1.0])]]),
     InvalidInputError, r'T_targets\[3\]: not a rigid transform'),
    (np.broadcast_to(np.eye(4), (MAX_PATH_POSES + 1, 4, 4)), InvalidInputError, 'at most'),
])
def test_bad_paths_raise_typed_errors(ur5, targets, error, match):
    with pytest.raises(error, match=match):
        ur5.solver.solve_path('tool0', targets)


@pytest.mark.parametrize('step', [0.0, -1.0, np.nan, np.inf, 7.0, 'x'])
def test_bad_joint_step_bounds_are_refused(ur5, step):
    with pytest.raises(InvalidInputError, match='max_joint_step'):
        ur5.solver.solve_path('tool0', np.eye(4)[None], max_joint_step=step)


@pytest.mark.parametrize('robot, tip', [(KINOVA, 'j2s6s200_end_effector'),
                                        (PR2, 'l_gripper_tool_frame')])
def test_a_path_from_huge_seeds_on_continuous_joints_is_checked_where_it_is_returned(robot, tip):
    """Kinova's (analytic) and PR2's left arm (held closed form) with their continuous joints
    seeded 1000.3, -1e9 and 1e12 rad, the robot where those angles put it, on paths of 20
    poses the tip reaches moving every joint 0.02 rad or less between them: the path is solved
    from the seed's angles within a turn of zero and moved back, every pose checked again
    (Pinocchio here). Where a double holds the seed's angle finely enough (1000.3; -1e9 to
    1.2e-7), the path starts next to the seed; where not (1e12), it says it stays within a
    turn of zero -- at 1e12 it used to be refused, "clipped into the limits" or "the branch
    must change".
    """
    arm = Arm(erd(robot), tip)
    chain = arm.solver.chain(tip)
    rolls = chain.moved[chain.unbounded]
    assert len(rolls) >= 2
    rng = np.random.default_rng(3)
    for size in (1000.3, -1e9, 1e12):
        for q0, _ in random_lines(arm, 2, 11):
            seed = q0.copy()
            seed[rolls] = size
            q0[rolls] = np.arctan2(np.sin(size), np.cos(size))      # where the robot is
            dq = np.zeros_like(q0)
            dq[chain.moved] = rng.uniform(-0.02, 0.02, len(chain.moved))
            T = np.array([arm.pose(q0 + k * dq) for k in range(20)])   # reachable poses
            result = arm.solver.solve_path(tip, T, seed, timeout=5.0)
            assert result.success and result.solved == 20, (size, result.message)
            check_path(arm, result.q, T, tol=2e-5)
            steps = np.abs(np.diff(result.q[:, chain.moved], axis=0)).max()
            assert steps <= ik_path.DEFAULT_MAX_JOINT_STEP
            near = np.abs(result.q[0, rolls] - seed[rolls]).max() <= np.pi
            if math.ulp(abs(size)) < 1e-8:      # 1000.3: the seed's angles held to 1e-13
                assert near and np.abs(result.q[0] - seed).max() < 0.5, size
                continue
            if math.ulp(abs(size)) > 2e-5:      # 1e12: to 1.2e-4 only
                assert not near
            if not near:
                assert 'within a turn of zero' in result.message, result.message
                assert np.abs(result.q[:, rolls]).max() <= 2 * np.pi


def test_a_redundant_arms_path_takes_the_solution_next_to_the_last_where_one_answer_jumps():
    """Baxter's right arm where a 100-pose line (made by Pinocchio from a straight joint-space
    motion, a review's) had taken it by pose 85, and that line's pose 86: one solve seeded
    there answered 1.1-4.1 rad away on NumPy 2.4 (its first converging start not the seed's;
    0.19 rad on NumPy 1.26 once) and the path failed, 'the branch must change'. A solution
    lies 0.1 rad away, which the seed's own iteration reaches through a pose halfway: the path
    takes it, and every pose is reached on Pinocchio's pose, inside the limits.
    """
    arm = Arm(erd(BAXTER), 'right_gripper')
    moved = arm.solver.chain('right_gripper').moved
    q_a, q_b = arm.model.middle_configuration(), arm.model.middle_configuration()
    q_a[moved] = [1.288821363147862, -1.5150923078794412, -0.2792085364771082,
                  1.9517654018141941, 1.2683555316984672, 0.45751820513921926,
                  1.8785058796956564]
    q_b[moved] = [-0.1136002241484686, -0.01509230787944116, 0.02233093271099396,
                  0.8518708985794794, 1.9994782680031316, -0.17464601116734824,
                  2.1090526379265206]
    target = arm.pose(q_a + 86 / 99 * (q_b - q_a))
    prev = arm.model.middle_configuration()
    prev[moved] = [0.351792267075598, -0.14464333866558182, -0.5345203200811008,
                   0.9776622716951489, 1.4145375718618753, 0.1742533662573674,
                   3.03870905309343]
    T = np.array([arm.pose(prev), target])
    result = arm.solver.solve_path('right_gripper', T, prev)
    assert result.success, result.message
    assert np.abs(np.diff(result.q, axis=0)).max() == result.max_joint_step < 0.15
    check_path(arm, result.q, T, 1e-5)


@pytest.mark.parametrize('timeout', [0.003, 0.015, 0.05])
def test_a_redundant_arms_path_keeps_its_budget_and_says_when_it_ran_out(timeout):
    """PR2's right arm on lines leaving the workspace (2 m) and Baxter's spinning its tool two
    whole turns: a path that fails returns by its ``timeout`` (plus a solve's overrun), and one
    cut short says the time budget ran out. A review's: the pose-by-pose search reused the
    time left from before the previous solve (PR2's paths 74-94 ms for 50), and a jump found
    as the deadline passed was reported as 'the branch must change' (34 of 120 spins).
    """
    from scipy.spatial.transform import Rotation as R
    rng = np.random.default_rng(0)
    for relative, tip in ((PR2, 'r_gripper_tool_frame'), (BAXTER, 'right_gripper')):
        arm = Arm(erd(relative), tip)
        for _ in range(4):
            q0 = arm.random_q(rng)
            T0 = arm.pose(q0)
            T = np.repeat(T0[None], 100, axis=0)
            if relative == PR2:
                d = rng.normal(size=3)
                T[:, :3, 3] += 2.0 * np.linspace(0, 1, 100)[:, None] * d / np.linalg.norm(d)
            else:
                spin = R.from_rotvec(np.linspace(0, 4 * np.pi, 100)[:, None] * [0, 0, 1])
                T[:, :3, :3] = T0[:3, :3] @ spin.as_matrix()
            start = time.monotonic()
            result = arm.solver.solve_path(tip, T, q0, timeout=timeout)
            elapsed = time.monotonic() - start
            assert elapsed <= timeout + 0.025
            if not result.success and elapsed >= timeout:
                assert 'the time budget ran out' in result.message, result.message
            check_path(arm, result.q[:result.solved], T[:result.solved], 1e-5)
