"""Inverse kinematics: solutions inside the limits that reproduce the target, near the seed;
position-only mode; honest failures; closed-form planar IK as a reference.
"""
import math
import re
import threading
import time
import warnings

import numpy as np
from pinocchio_reference import Arm
import pytest
from robots import BAXTER, COMPARED, DEMO_ARM, PANDA, PR2, TALOS, TIAGO, TREE_URDF, UR5, erd, load

from ros_dynamics.engine import (
    IKSolver,
    InvalidInputError,
    RobotModel,
    ShapeError,
    UnknownFrameError,
)
from ros_dynamics.engine.ik_answers import (
    TABLE_ITERATIONS,
    TABLE_STARTS,
    TABLE_TIME,
    _turned_into_limits,
)
from ros_dynamics.engine.ik_chain import Chain
from ros_dynamics.engine.ik_search import pose_error
from ros_dynamics.engine.ik_seeds import QUERY_EPS, ROTATION_LENGTH, SeedTable, feature_distance2
from ros_dynamics.engine.planar_ik import planar_2r_ik, planar_3r_ik
from ros_dynamics.engine.rotations import exp_so3, log_so3


def random_reachable(model, rng, tip):
    lo = np.where(np.isfinite(model.lower_limits), model.lower_limits, -np.pi)
    hi = np.where(np.isfinite(model.upper_limits), model.upper_limits, np.pi)
    q = rng.uniform(lo, hi)
    return q, model.frame_pose(q, tip)


def assert_solution(model, tip, T, result, tol=1e-5):
    assert result.success, result.message
    q = result.q
    assert np.all(q >= model.lower_limits) and np.all(q <= model.upper_limits)
    T_q = model.frame_pose(q, tip)
    assert np.linalg.norm(T_q[:3, 3] - T[:3, 3]) <= tol
    assert np.linalg.norm(log_so3(T[:3, :3] @ T_q[:3, :3].T)) <= tol
    assert result.position_error <= tol and result.orientation_error <= tol


@pytest.mark.parametrize('robot, tip', [(PANDA, 'panda_hand'), (UR5, 'tool0')])
@pytest.mark.parametrize('seed_table', [False, True])
def test_random_reachable_targets_are_solved_inside_the_limits(robot, tip, seed_table):
    model = load(erd(robot))
    solver = IKSolver(model)
    if seed_table:
        solver.prepare(tip, samples=5000)
    rng = np.random.default_rng(61)
    solved = 0
    n = 40
    for i in range(n):
        _, T = random_reachable(model, rng, tip)
        result = solver.solve(tip, T, timeout=0.2, rng=i)
        if result.success:
            assert_solution(model, tip, T, result)
            solved += 1
        else:   # a failure must say so and carry the best errors it reached
            assert result.position_error > 1e-5 or result.orientation_error > 1e-5
    assert solved >= 0.95 * n


def test_a_seed_near_the_answer_gives_the_nearby_solution():
    model = load(DEMO_ARM)
    solver = IKSolver(model)
    rng = np.random.default_rng(62)
    for i in range(10):
        q_true, T = random_reachable(model, rng, 'tool0')
        seed = q_true + rng.normal(scale=0.05, size=model.nq)
        result = solver.solve('tool0', T, seed, timeout=0.5, rng=i)
        assert_solution(model, 'tool0', T, result)
        # No jump: at most the other elbow/wrist branch when both lie next to the seed.
        assert np.abs(result.q - seed).max() < 0.25


def test_a_warm_seed_of_an_arm_without_a_family_converges_alone():
    """Baxter's arm (numerical) tracking a target: a seed 0.01 rad from the answer is iterated
    alone, without the search's set-up, and converges in at most four iterations to the nearby
    solution (Pinocchio's pose) -- but near a singularity (the wrist straight: slower than
    quadratic convergence) the search answers instead. Next to a joint limit the step would
    cross, that joint is held where it is and the step taken again (the search's active set): the
    others reach the target, and the answer stays inside the limits, next to the seed.
    """
    arm = Arm(erd(BAXTER), 'left_gripper')
    model, chain = arm.model, arm.solver.chain('left_gripper')
    lo, hi = model.lower_limits[chain.moved], model.upper_limits[chain.moved]
    rng = np.random.default_rng(63)
    alone = 0
    for i in range(20):
        q_true = model.middle_configuration()
        q_true[chain.moved] = rng.uniform(lo + 0.3, hi - 0.3)
        T = arm.pose(q_true)
        seed = q_true.copy()
        seed[chain.moved] += rng.normal(scale=0.01, size=len(chain.moved))
        result = arm.solver.solve('left_gripper', T, seed, rng=i)
        assert result.success and result.method == 'numerical', result.message
        if result.message.startswith('converged from the seed'):
            alone += 1
            assert result.attempts == 1 and 1 <= result.iterations <= 4
        assert np.abs(arm.pose(result.q) - T).max() < 1e-5
        assert np.abs(result.q - seed).max() < 0.1
    assert alone >= 18
    # At the wrist pitch's upper limit, the seed pushed past where the target needs it.
    j = model.q_names.index('left_w1')
    q_true = model.middle_configuration()
    q_true[j] = model.upper_limits[j]
    T = arm.pose(q_true)
    seed = q_true.copy()
    seed[j] -= 0.005
    seed[chain.moved[0]] += 0.005
    result = arm.solver.solve('left_gripper', T, seed, rng=1, timeout=0.5)
    assert result.success and result.message.startswith('converged from the seed')
    assert np.abs(arm.pose(result.q) - T).max() < 1e-5
    assert np.all((result.q >= model.lower_limits) & (result.q <= model.upper_limits))
    assert np.abs(result.q - seed).max() < 0.1


def test_a_far_seed_is_answered_from_the_seed_tables_nearest_starts():
    """TIAGo Pro's arm on its torso (a slide and seven joints: no analytic family, held or not,
    nor axes in pairs) with a seed table: for a mid-range seed, far from its targets, the
    table's nearest starts iterated alone answer most targets (:func:`table_result`: at most
    TABLE_STARTS starts, TABLE_ITERATIONS iterations), the search the others -- every answer
    inside the limits at its target on Pinocchio's pose. A seed near its target (0.05 and 0.15
    rad off in every joint) is never answered from the table; 0.05 rad off, the answer is next
    to it.
    """
    tip = 'arm_left_tool_link'
    arm = Arm(erd('tiago_pro_description/robots/tiago_pro.urdf'), tip)
    model, solver = arm.model, arm.solver
    solver.prepare(tip)
    chain = solver.chain(tip)
    assert solver._family(chain, model.middle_configuration(), None) is None
    lo, hi = model.lower_limits, model.upper_limits
    low, high = model.sampling_lower[chain.moved], model.sampling_upper[chain.moved]
    margin = np.minimum(0.2, 0.25 * (high - low))        # the torso's slide: a quarter
    rng = np.random.default_rng(81)
    from_table = 0
    for i in range(40):
        q_true = model.middle_configuration()
        q_true[chain.moved] = rng.uniform(low, high)
        T = arm.pose(q_true)
        result = solver.solve(tip, T, model.middle_configuration(), rng=i,
                              timeout=0.5)
        assert result.success and result.method == 'numerical', result.message
        assert np.abs(arm.pose(result.q) - T).max() < 1e-5
        assert np.all((result.q >= lo) & (result.q <= hi))
        if result.message.startswith('converged from the seed table'):
            from_table += 1
            assert result.attempts <= TABLE_STARTS
            assert 1 <= result.iterations <= TABLE_ITERATIONS
    assert from_table >= 24
    # Every joint listed as active answers as none listed; with less than TABLE_TIME left,
    # the search alone answers (the starts would leave it too little).
    every = [model.q_names[j] for j in chain.moved]
    listed = solver.solve(tip, T, model.middle_configuration(), rng=0,
                          timeout=0.5, active_joints=every)
    alone = solver.solve(tip, T, model.middle_configuration(), rng=0,
                         timeout=0.5)
    assert listed.message == alone.message and np.array_equal(listed.q, alone.q)
    assert TABLE_TIME > 1e-3
    short = solver.solve(tip, T, model.middle_configuration(), rng=0,
                         timeout=1e-3)
    assert 'seed table' not in short.message
    for off in (0.05, 0.15):
        for i in range(20):
            q_true = model.middle_configuration()
            q_true[chain.moved] = rng.uniform(low + margin, high - margin)
            T = arm.pose(q_true)
            seed = q_true.copy()
            seed[chain.moved] += rng.choice([-off, off], len(chain.moved))
            result = solver.solve(tip, T, seed, rng=i, timeout=0.5)
            assert result.success and 'seed table' not in result.message, result.message
            assert np.abs(arm.pose(result.q) - T).max() < 1e-5
            if off == 0.05:
                assert np.abs(result.q - seed).max() < 0.1


def test_a_start_from_the_seed_table_takes_the_turn_nearest_the_seed():
    """UR5's wrist_2_link (five joints, four of them limited to [-2 pi, 2 pi]: no family), seeds
    3.5 rad from the middle in two of them, and 11 rad (outside the limits): every answer, from
    the seed table or the search (weighted: the search alone), has each such joint at the turn
    nearest the seed inside the limits.
    """
    model = load(erd(UR5))
    solver = IKSolver(model)
    solver.prepare('wrist_2_link', samples=5000)
    lo, hi = model.lower_limits, model.upper_limits
    rng = np.random.default_rng(82)
    from_table = 0
    for i in range(30):
        T = model.frame_pose(rng.uniform(lo, hi), 'wrist_2_link')
        for size, weights in ((3.5, None), (11.0, None), (3.5, np.ones(6)), (11.0, np.ones(6))):
            seed = model.middle_configuration()
            seed[[0, 3]] = rng.choice([-size, size], 2)
            result = solver.solve('wrist_2_link', T, seed, rng=i, timeout=0.5, weights=weights)
            assert_solution(model, 'wrist_2_link', T, result)
            if size == 3.5 and weights is None:
                from_table += result.message.startswith('converged from the seed table')
            for j in (0, 1, 3, 4):
                assert lo[j] <= result.q[j] <= hi[j]
                for turn in (-2 * np.pi, 2 * np.pi):
                    other = result.q[j] + turn
                    assert not (lo[j] <= other <= hi[j]
                                and abs(other - seed[j]) < abs(result.q[j] - seed[j]))
    assert from_table >= 15


def test_the_turn_nearest_the_seed_inside_the_limits_also_for_a_seed_turns_outside():
    """An angle is moved by the whole turns that bring it nearest the seed inside its limits
    (widened by the slack, then clipped in), however many turns outside them the seed is; a
    slide is kept or refused, never turned.
    """
    limits = [(-1.0, 1.0, True)]
    for seed in (12.0, -12.0, 1e6, 0.0):
        assert _turned_into_limits([0.5], [seed], limits) == ([0.5], False)
    assert _turned_into_limits([0.5 - 2 * np.pi], [40.0], limits)[0] == pytest.approx([0.5])
    assert _turned_into_limits([0.5], [3.0], [(-7.0, 7.0, True)]) == ([0.5], False)
    assert _turned_into_limits([0.5], [5.0], [(-7.0, 7.0, True)])[0] == pytest.approx(
        [0.5 + 2 * np.pi])
    assert _turned_into_limits([3.0], [0.0], limits) is None
    assert _turned_into_limits([1.00001], [0.0], limits, 1e-3) == ([1.0], True)
    assert _turned_into_limits([2.0], [0.0], [(-1.0, 1.0, False)]) is None


def test_huge_seeds_on_continuous_joints_get_answers_checked_where_they_are_returned():
    """PR2's left arm, its forearm and wrist rolls continuous, seeded 1000.3, -1e9 and 1e100 rad
    there. The solve works from the seed's angles within a turn of zero and moves its answer
    back: every configuration returned reaches the target on Pinocchio within the tolerance,
    by the held closed form, the search (weighted) and several solutions alike. Where a double
    holds the seed's angle finely enough (1000.3: to 1e-13) the answer is within half a turn
    of the seed; where it does not (1e100; -1e9 at 1e-9), it is within a turn of zero and says
    so -- it used to come back turned next to the seed, success=True and 2.4 rad off.
    """
    arm = Arm(erd(PR2), 'l_gripper_tool_frame')
    model, solver = arm.model, arm.solver
    rolls = [model.joint_index(name) for name in ('l_forearm_roll_joint', 'l_wrist_roll_joint')]
    assert np.all(np.isinf(model.lower_limits[rolls]))
    rng = np.random.default_rng(19)
    for size in (1000.3, -1e9, 1e100):
        for i in range(4):
            T = arm.pose(arm.random_q(rng))
            seed = model.middle_configuration()
            seed[rolls] = size
            for tol in (1e-5, 1e-9):
                for options in ({}, {'weights': np.ones(6)}, {'max_solutions': 4}):
                    result = solver.solve('l_gripper_tool_frame', T, seed, rng=i, timeout=0.5,
                                          position_tolerance=tol, orientation_tolerance=tol,
                                          **options)
                    assert result.success, result.message
                    for q in [result.q] + result.solutions:
                        T_q = arm.pose(q)
                        assert np.linalg.norm(T_q[:3, 3] - T[:3, 3]) <= tol * (1 + 1e-6)
                        assert np.linalg.norm(log_so3(T[:3, :3] @ T_q[:3, :3].T)) <= \
                            tol * (1 + 1e-6)
                    near = np.abs(result.q[rolls] - seed[rolls]) <= np.pi + 1e-9
                    if math.ulp(abs(size)) < 1e-3 * tol:
                        assert near.all(), (size, tol, result.q[rolls])
                    else:
                        assert near.all() or 'within a turn of zero' in result.message and \
                            np.all(np.abs(result.q[rolls]) <= 2 * np.pi)
                    if size == 1e100:
                        assert 'within a turn of zero' in result.message


def _ur5_wide(directory, lower, upper):
    """The UR5 (an :class:`Arm` to tool0, written in ``directory``) with its shoulder pan and
    last wrist joint limited to [``lower``, ``upper``] rad (strings), and those joints'
    indices in q.
    """
    text = open(erd(UR5)).read()
    for joint in ('shoulder_pan_joint', 'wrist_3_joint'):
        text = re.sub(rf'(<joint name="{joint}".*?<limit[^>]*?lower=")[^"]*("[^>]*?upper=")[^"]*"',
                      rf'\g<1>{lower}\g<2>{upper}"', text, flags=re.S)
    path = directory / f'ur5_{lower}_{upper}.urdf'
    path.write_text(text)
    arm = Arm(str(path), 'tool0')
    return arm, [arm.model.joint_index('shoulder_pan_joint'),
                 arm.model.joint_index('wrist_3_joint')]


def test_huge_seeds_on_joints_limited_only_by_huge_limits_are_treated_as_unbounded(tmp_path):
    """The UR5 with its shoulder pan and last wrist joint "unlimited" as +-1e16 rad (a URDF
    convention), seeded 1000.3, -1e9 and 1e12 rad there: as for continuous joints, the solve
    and the path work within a turn of zero and move the answer back, checked again. Every
    configuration reaches the target on Pinocchio inside the limits; at 1e12 rad the answer
    stays within a turn of zero and says so -- it used to come back next to the seed,
    success=True with the tip 1.2e-5 m and 2.1e-5 rad off, and the path was refused as
    "clipped into the joint limits".
    """
    arm, wide = _ur5_wide(tmp_path, '-1e16', '1e16')
    model, solver = arm.model, arm.solver
    assert np.all(model.upper_limits[wide] == 1e16)
    solver.prepare('tool0')
    rng = np.random.default_rng(23)
    tol = 1e-5
    zero = 0

    def reaches(q, T):
        T_q = arm.pose(q)
        assert np.linalg.norm(T_q[:3, 3] - T[:3, 3]) <= tol * (1 + 1e-6)
        assert np.linalg.norm(log_so3(T[:3, :3] @ T_q[:3, :3].T)) <= tol * (1 + 1e-6)
        assert np.all(q >= model.lower_limits) and np.all(q <= model.upper_limits)

    for size in (1000.3, -1e9, 1e12):
        for _ in range(3):
            q_true = arm.random_q(rng)
            q_true[wide] = rng.uniform(-np.pi, np.pi, 2)
            T = arm.pose(q_true)
            seed = q_true.copy()
            seed[wide] = size
            for options in ({}, {'weights': np.ones(6)}, {'max_solutions': 8}):
                result = solver.solve('tool0', T, seed, rng=0, timeout=0.5, **options)
                assert result.success, result.message
                for q in [result.q] + result.solutions:
                    reaches(q, T)
                near = np.abs(result.q[wide] - seed[wide]).max() <= np.pi
                assert near or size == 1e12 and 'within a turn of zero' in result.message
                zero += not near
            line = solver.solve_path('tool0', np.array([T, T]), seed)
            assert line.success, line.message
            for q in line.q:
                reaches(q, T)
            near = np.abs(line.q[0, wide] - seed[wide]).max() <= np.pi
            assert near or size == 1e12 and 'within a turn of zero' in line.message
            zero += not near
    assert zero >= 3                 # 1e12 rad moved back missed the tolerance that often


def test_joints_unlimited_on_one_side_start_from_a_turn_inside_their_limits(tmp_path):
    """The UR5 with its shoulder pan and last wrist joint limited to [-1e16, 3] rad: random
    starts and the seed table come from the turn inside the limits nearest [-pi, pi] -- from
    the middle of the limits, where a double holds an angle only to 1 rad, position-only
    answers came back success=True 0.05-0.11 m off and weighted ones never converged. Every
    answer reaches its target on Pinocchio inside the limits, with and without a seed table.
    """
    arm, wide = _ur5_wide(tmp_path, '-1e16', '3')
    model, solver = arm.model, arm.solver
    chain = solver.chain('tool0')
    assert np.all(chain.upper[[0, 5]] == 3.0) and np.allclose(chain.lower[[0, 5]], 3 - 2 * np.pi)
    rng = np.random.default_rng(9)
    for table in (False, True):
        if table:
            solver.prepare('tool0', 2000)
        for t in range(10):
            T = arm.pose(rng.uniform(-3, 3, 6))
            seed = rng.uniform(-3, 3, 6)
            for options in ({}, {'position_only': True}, {'weights': np.ones(6)}):
                result = solver.solve('tool0', T, seed, rng=t, timeout=0.2, **options)
                assert result.success, result.message
                T_q = arm.pose(result.q)
                assert np.linalg.norm(T_q[:3, 3] - T[:3, 3]) <= 1e-5 * (1 + 1e-6)
                if 'position_only' not in options:
                    assert np.linalg.norm(log_so3(T[:3, :3] @ T_q[:3, :3].T)) <= 1e-5 * (1 + 1e-6)
                assert np.all(result.q >= model.lower_limits)
                assert np.all(result.q <= model.upper_limits)


def test_a_path_from_a_seed_at_a_huge_limit_keeps_every_pose_on_the_same_turn(tmp_path):
    """The UR5 with its shoulder pan and last wrist joint limited to +-1e6 rad (unbounded for
    the IK), seeded at those limits: a path is solved within a turn of zero and moved back,
    a turn less where a pose would pass the limit -- for every pose of the path alike: moved
    one by one, consecutive poses came back a whole turn apart, success=True with a step of
    6.2 rad past ``max_joint_step`` 0.3. Each pose checked with Pinocchio inside the limits.
    """
    arm, wide = _ur5_wide(tmp_path, '-1e6', '1e6')
    model = arm.model
    rng = np.random.default_rng(0)
    followed = 0
    for _ in range(40):
        q = rng.uniform(-3, 3, 6)
        T = np.array([arm.pose(q + s) for s in np.linspace(0.0, 0.1, 5)])
        seed = rng.uniform(-3, 3, 6)
        seed[wide] = 1e6 * rng.choice([-1, 1], 2)
        result = arm.solver.solve_path('tool0', T, seed, max_joint_step=0.3, timeout=0.3)
        if not result.success:
            continue
        followed += 1
        steps = np.abs(np.diff(result.q, axis=0)).max()
        assert steps <= 0.3 + 1e-9 and steps <= result.max_joint_step + 1e-9, steps
        for q_k, T_k in zip(result.q, T):
            assert np.abs(arm.pose(q_k) - T_k).max() < 1e-5
            assert np.all(q_k >= model.lower_limits) and np.all(q_k <= model.upper_limits)
    assert followed >= 20


def _mimic_arm(path, multiplier):
    """Seven joints written here: continuous j2 drives j3 (mimic, ``multiplier``), six move."""
    inertial = ('<inertial><mass value="1"/><inertia ixx="0.01" iyy="0.01" izz="0.01" '
                'ixy="0" ixz="0" iyz="0"/></inertial>')
    joints = [('j1', 'revolute', '0 0 0.1', '0 0 1', ''),
              ('j2', 'continuous', '0 0 0.3', '0 1 0', ''),
              ('j3', 'revolute', '0 0 0.3', '0 1 0',
               f'<mimic joint="j2" multiplier="{multiplier}" offset="0.1"/>'),
              ('j4', 'revolute', '0 0 0.25', '0 0 1', ''),
              ('j5', 'revolute', '0 0 0.2', '0 1 0', ''),
              ('j6', 'revolute', '0.05 0 0.1', '1 0 0', ''),
              ('j7', 'revolute', '0 0.03 0.1', '0 0 1', '')]
    text = ''.join(f'<link name="l{i}">{inertial}</link>' for i in range(8))
    for i, (name, kind, xyz, axis, mimic) in enumerate(joints):
        limit = '' if kind == 'continuous' else 'lower="-3" upper="3" '
        text += (f'<joint name="{name}" type="{kind}"><parent link="l{i}"/><child '
                 f'link="l{i + 1}"/><origin xyz="{xyz}"/><axis xyz="{axis}"/><limit {limit}'
                 f'effort="1" velocity="1"/>{mimic}</joint>')
    text += ('<link name="tool"/><joint name="tool_joint" type="fixed"><parent link="l7"/>'
             '<child link="tool"/><origin xyz="0.1 0.01 0.05" rpy="0.1 0.2 0.3"/></joint>')
    path.write_text(f'<robot name="mimic_arm">{text}</robot>')
    return str(path)


@pytest.mark.parametrize('multiplier', [0.5, 2.0])
def test_a_continuous_joint_driving_a_mimic_joint_turns_only_where_the_pose_stays(
        tmp_path, multiplier):
    """A continuous joint driving a mimic joint at half its angle: a whole turn of it turns the
    mimic joint by half a turn, so no answer may be moved by whole turns toward the seed (a
    hostile review found the tip 1.4 m and pi rad off, reported ``success=True``); at twice its
    angle a turn keeps the pose, and huge seeds are solved within a turn of zero as for any
    unbounded angle. Every configuration returned is checked on Pinocchio.
    """
    arm = Arm(_mimic_arm(tmp_path / 'mimic_arm.urdf', multiplier), 'tool')
    rng = np.random.default_rng(23)
    for size in (3.0, 1000.2, 1e12):
        for i in range(6):
            q = arm.random_q(rng)
            q[1] = -size if i % 2 else rng.uniform(-3.0, 3.0)
            T = arm.pose(q)
            seed = np.clip(q + 0.2, arm.model.lower_limits, arm.model.upper_limits)
            seed[1] = size
            for options in ({}, {'max_solutions': 4}, {'position_only': True}):
                result = arm.solver.solve('tool', T, seed, rng=i, timeout=0.5, **options)
                if not result.success:
                    continue
                for q_found in [result.q] + result.solutions:
                    T_found = arm.pose(q_found)
                    assert np.linalg.norm(T_found[:3, 3] - T[:3, 3]) <= 1e-5 * (1 + 1e-6)
                    if not options.get('position_only'):
                        assert np.linalg.norm(log_so3(T[:3, :3] @ T_found[:3, :3].T)) <= \
                            1e-5 * (1 + 1e-6)


@pytest.mark.parametrize('limit', ['6.5', '1e16'])
def test_a_joint_driving_a_finger_at_half_its_angle_is_not_turned_by_whole_turns(tmp_path, limit):
    """The arm above without its mimic joint, j6 limited to +-6.5 rad (more than a turn) or
    +-1e16 ("unlimited") and driving a finger off the chain at half its angle: a whole turn of
    j6 keeps the tip but turns the finger by half a turn, so neither the closed forms
    (``Chain.turning``) nor the search (``Chain.turns``, which it wraps across the limits and
    moves toward the seed) turn it; answers from seeds a turn away reach the target on
    Pinocchio inside the limits -- at +-1e16, the search's random starts come from one turn
    (they came from +-1e16: answers at 9.6e15 rad, the finger's angle known to 1 rad).
    """
    text = open(_mimic_arm(tmp_path / 'arm.urdf', 1.0)).read()
    text = re.sub(r'<mimic joint="j2"[^>]*/>', '', text)
    text = re.sub(r'(<joint name="j6".*?<limit )lower="-3" upper="3"',
                  rf'\1lower="-{limit}" upper="{limit}"', text, flags=re.S)
    finger = ('<link name="finger"><inertial><mass value="0.1"/><inertia ixx="0.001" iyy="0.001" '
              'izz="0.001" ixy="0" ixz="0" iyz="0"/></inertial></link><joint name="f" '
              'type="revolute"><parent link="l6"/><child link="finger"/><origin xyz="0 0.05 0"/>'
              '<axis xyz="0 0 1"/><limit lower="-4" upper="4" effort="1" velocity="1"/>'
              '<mimic joint="j6" multiplier="0.5"/></joint>')
    path = tmp_path / 'finger_arm.urdf'
    path.write_text(text.replace('</robot>', finger + '</robot>'))
    arm = Arm(str(path), 'tool')
    chain = arm.solver.chain('tool')
    j6 = list(chain.moved).index(arm.model.joint_index('j6'))
    assert not chain.mimic and not chain.turning[j6]
    assert chain.turns is None or j6 not in chain.turns
    assert all(i != j6 for i, *_ in chain.turn_limits)
    assert chain.upper[j6] - chain.lower[j6] <= 13.0
    rng = np.random.default_rng(29)
    for i in range(6):
        q = arm.random_q(rng)
        q[chain.moved[j6]] = rng.uniform(-3.0, 3.0)
        T = arm.pose(q)
        seed = q.copy()
        seed[chain.moved[j6]] += 2 * np.pi if q[chain.moved[j6]] < 0 else -2 * np.pi
        for options in ({}, {'weights': np.ones(6)}, {'position_only': True}):
            result = arm.solver.solve('tool', T, seed, rng=i, timeout=0.5, **options)
            assert result.success, result.message
            T_found = arm.pose(result.q)
            assert np.linalg.norm(T_found[:3, 3] - T[:3, 3]) <= 1e-5 * (1 + 1e-6)
            assert np.all(result.q >= arm.model.lower_limits)
            assert np.all(result.q <= arm.model.upper_limits)
            assert abs(result.q[chain.moved[j6]]) < 20.0


def test_a_seed_table_of_one_to_three_samples_still_answers():
    """``prepare`` with 1, 2 and 3 samples (the node allows ``ik.seed_samples`` down to 1) on
    TIAGo's arm, whose held joints' choice it measures: prepare and solves answer, on Pinocchio
    (every solve raised IndexError, the table's fourth-nearest sample taken as the measure of
    near).
    """
    arm = Arm(erd(TIAGO), 'arm_tool_link')
    rng = np.random.default_rng(5)
    for samples in (1, 2, 3):
        arm.solver.prepare('arm_tool_link', samples)
        for _ in range(5):
            T = arm.pose(arm.random_q(rng))
            result = arm.solver.solve('arm_tool_link', T, arm.model.middle_configuration(),
                                      rng=0, timeout=0.5)
            assert result.success, result.message
            assert np.abs(arm.pose(result.q) - T).max() < 1e-5


def test_joints_a_solve_does_not_move_keep_the_seeds_values_bit_for_bit():
    """PR2's right wrist roll (outside the left arm's chain) and its left one held by
    ``active_joints``, both continuous, seeded -0.0: the search's move of unbounded angles
    toward the seed used to touch every one in the model and give +0.0.
    """
    arm = Arm(erd(PR2), 'l_gripper_tool_frame')
    model = arm.model
    outside, held = (model.joint_index(n) for n in ('r_wrist_roll_joint', 'l_wrist_roll_joint'))
    chain = arm.solver.chain('l_gripper_tool_frame')
    active = [model.q_names[i] for i in chain.moved if i != held]
    rng = np.random.default_rng(29)
    for i in range(5):
        seed = arm.random_q(rng)
        seed[[outside, held]] = -0.0
        T = arm.pose(seed + 0.05)
        for options in ({}, {'weights': np.ones(6)}, {'active_joints': active}):
            result = arm.solver.solve('l_gripper_tool_frame', T, seed, rng=i, timeout=0.2,
                                      **options)
            assert np.signbit(result.q[outside]), options
            if 'active_joints' in options:
                assert np.signbit(result.q[held])


def test_tight_tolerances_keep_a_redundant_arm_near_its_seed():
    """Baxter's arm asked for 1e-9 from a seed 0.01 rad off: the null-space pull toward the seed
    used to bias the step across the task by ``g lambda_0 |q_seed - q|`` and stall near 1e-8 m,
    so a restart far away answered (up to 1.7 rad from the seed). Now the pull vanishes with the
    error: the answer is the nearby one, on Pinocchio's pose within 1e-9 -- and so is a path.
    """
    arm = Arm(erd(BAXTER), 'left_gripper')
    model, chain = arm.model, arm.solver.chain('left_gripper')
    lo, hi = model.lower_limits[chain.moved], model.upper_limits[chain.moved]
    rng = np.random.default_rng(3)
    for i in range(10):
        q = model.middle_configuration()
        q[chain.moved] = rng.uniform(lo + 0.3, hi - 0.3)
        target = q.copy()
        target[chain.moved] += rng.normal(scale=0.01, size=len(chain.moved))
        T = arm.pose(target)
        result = arm.solver.solve('left_gripper', T, q, position_tolerance=1e-9,
                                  orientation_tolerance=1e-9, timeout=0.05, rng=i)
        assert result.success, result.message
        assert np.abs(arm.pose(result.q) - T).max() < 2e-9
        assert np.abs(result.q - q).max() < 0.1
    T_line = np.repeat(arm.pose(q)[None], 20, axis=0)
    T_line[:, 2, 3] += np.linspace(0.0, 0.019, 20)
    path = arm.solver.solve_path('left_gripper', T_line, q, position_tolerance=1e-9,
                                 orientation_tolerance=1e-9)
    assert path.success, path.message
    for q_n, T_n in zip(path.q, T_line):
        assert np.abs(arm.pose(q_n) - T_n).max() < 2e-9


def test_a_seed_that_already_reaches_the_target_is_the_answer():
    """Baxter's arm (numerical: no six of its joints form an analytic family) asked for where
    it is: the seed comes back without a search. A seed beyond a joint limit is not an answer,
    however well it reaches.
    """
    model = load(erd(BAXTER))
    solver = IKSolver(model)
    moved = solver.chain('left_gripper').moved
    q = model.middle_configuration()
    q[moved] += 0.3
    T = model.frame_pose(q, 'left_gripper')
    result = solver.solve('left_gripper', T, q)
    assert result.success and result.method == 'seed'
    assert result.iterations == 0 and np.array_equal(result.q, q)
    assert result.position_error < 1e-12 and result.orientation_error < 1e-7
    beyond = q.copy()
    beyond[moved[0]] = model.upper_limits[moved[0]] + 0.05
    result = solver.solve('left_gripper', model.frame_pose(beyond, 'left_gripper'), beyond)
    assert np.all(result.q >= model.lower_limits) and np.all(result.q <= model.upper_limits)


def test_redundancy_is_resolved_toward_the_seed():
    model = load(erd(PANDA))
    solver = IKSolver(model)
    rng = np.random.default_rng(63)
    q_true, T = random_reachable(model, rng, 'panda_hand')
    seed = q_true + rng.normal(scale=0.2, size=model.nq)
    seed = np.clip(seed, model.lower_limits, model.upper_limits)
    result = solver.solve('panda_hand', T, seed, timeout=0.5, rng=0)
    assert_solution(model, 'panda_hand', T, result)
    assert np.linalg.norm(result.q - seed) <= np.linalg.norm(q_true - seed) + 1e-6


def test_several_distinct_solutions_ranked_by_distance_to_the_seed():
    model = load(DEMO_ARM)
    solver = IKSolver(model)
    rng = np.random.default_rng(64)
    _, T = random_reachable(model, rng, 'tool0')
    seed = model.middle_configuration()
    result = solver.solve('tool0', T, seed, timeout=1.0, max_solutions=3, rng=1)
    assert result.success and len(result.solutions) == 3
    d = [np.linalg.norm(q - seed) for q in result.solutions]
    assert d == sorted(d)
    for q in result.solutions:
        assert np.linalg.norm(pose_error(model.frame_pose(q, 'tool0'), T)) < 2e-5
    assert min(np.linalg.norm(a - b) for i, a in enumerate(result.solutions)
               for b in result.solutions[i + 1:]) > 1e-3


def test_position_only_for_a_4_dof_arm():
    rows = [(0, 0, 0.3, 0, 'revolute'), (0, -np.pi / 2, 0, 0, 'revolute'),
            (0.4, 0, 0, 0, 'revolute'), (0.3, 0, 0, 0, 'revolute')]
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        model = RobotModel.from_dh(rows, tool=(np.array([0.1, 0, 0]), np.zeros(3)))
        solver = IKSolver(model)
    rng = np.random.default_rng(65)
    for i in range(10):
        _, T = random_reachable(model, rng, 'tool')
        T_other = T.copy()
        T_other[:3, :3] = exp_so3(rng.normal(size=3))          # orientation it cannot reach
        result = solver.solve('tool', T_other, position_only=True, timeout=0.5, rng=i)
        assert result.success, result.message
        np.testing.assert_allclose(model.frame_pose(result.q, 'tool')[:3, 3], T[:3, 3],
                                   atol=1e-5)


def test_unreachable_target_fails_honestly_and_respects_the_timeout():
    model = load(DEMO_ARM)
    solver = IKSolver(model)
    T = np.eye(4)
    T[:3, 3] = [3.0, 0, 0]                                      # the arm reaches about 1 m
    start = time.monotonic()
    # Weights make it numerical (the demo arm's geometry is analytic: test_ik_analytic.py).
    result = solver.solve('tool0', T, timeout=0.02, rng=0, weights=np.ones(6))
    elapsed = time.monotonic() - start
    assert result.method == 'numerical'
    assert not result.success and result.timed_out
    assert elapsed < 0.02 + 0.1          # a search that ignored its deadline would never end
    assert result.position_error > 1.5
    assert 'best position error' in result.message
    assert np.all(result.q >= model.lower_limits) and np.all(result.q <= model.upper_limits)
    # Analytic (the default for this geometry): out of reach is known at once, no search.
    start = time.monotonic()
    result = solver.solve('tool0', T, timeout=1.0)
    assert time.monotonic() - start < 0.5
    assert not result.success and not result.timed_out
    assert result.method == 'analytic three_parallel' and 'out of reach' in result.message
    assert result.position_error > 1.5
    assert np.all(result.q >= model.lower_limits) and np.all(result.q <= model.upper_limits)


def test_sub_millisecond_timeouts_are_honoured():
    """The deadline is checked after every iteration (~0.1 ms): a 0.5 ms budget ends within
    a few milliseconds of it (measured: 0.56 ms on a quiet machine; the fastest of twenty
    tries, and a margin for a machine loaded by other work -- the benchmark suite measures the
    overshoot itself).
    """
    model = load(erd(PANDA))
    solver = IKSolver(model)
    solver.prepare('panda_hand', samples=2000)
    T = np.eye(4)
    T[:3, 3] = [3.0, 0.0, 0.0]                                  # out of reach
    elapsed = []
    for i in range(20):
        start = time.monotonic()
        result = solver.solve('panda_hand', T, timeout=0.0005, rng=i)
        elapsed.append(time.monotonic() - start)
        assert result.timed_out and not result.success
    assert 0.0005 <= min(elapsed) < 0.0005 + 0.003


def test_mimic_joints_are_respected():
    model = load(erd(PANDA))                   # panda_finger_joint2 mimics joint1
    solver = IKSolver(model)
    rng = np.random.default_rng(66)
    q, T = random_reachable(model, rng, 'panda_rightfinger')
    result = solver.solve('panda_rightfinger', T, timeout=0.5, rng=0)
    assert_solution(model, 'panda_rightfinger', T, result)


def test_rotations_rounded_within_1e_6_are_accepted():
    """A rotation written with 7 digits (a YAML file, a message printed and typed back)."""
    model = load(DEMO_ARM)
    solver = IKSolver(model)
    T = model.frame_pose(model.middle_configuration() + 0.2, 'tool0')
    T_rounded = np.round(T, 7)
    assert np.abs(T_rounded[:3, :3] @ T_rounded[:3, :3].T - np.eye(3)).max() > 1e-9
    assert solver.solve('tool0', T_rounded, position_tolerance=1e-6,
                        orientation_tolerance=1e-6).success


@pytest.mark.parametrize('kwargs, error, match', [
    (dict(tip_frame='nope'), UnknownFrameError, "unknown frame 'nope'"),
    (dict(T_target=np.eye(3)), ShapeError, 'T_target: expected a 4x4'),
    (dict(T_target=np.full((4, 4), np.nan)), InvalidInputError, 'T_target: expected finite'),
    (dict(T_target=np.diag([2.0, 1, 1, 1])), InvalidInputError, 'not a rotation'),
    (dict(T_target=np.diag([-1.0, 1, 1, 1])), InvalidInputError, 'not a rotation'),  # mirror
    (dict(T_target=np.diag([1.0, -1, -1, 1]) + 1e-5 * np.eye(4, k=1)), InvalidInputError,
     'not a rotation'),                                                   # skewed by 1e-5
    (dict(T_target=np.zeros((4, 4))), InvalidInputError, 'not a rotation'),
    (dict(T_target=np.diag([1.0, 1, 1, 2])), InvalidInputError, 'last row 0 0 0 1'),
    (dict(T_target=np.eye(4) + np.eye(4, k=-3)), InvalidInputError, 'last row 0 0 0 1'),
    (dict(q_seed=np.zeros(3)), ShapeError, 'q_seed: expected 6 values'),
    (dict(timeout=0.0), InvalidInputError, 'timeout: expected'),
    (dict(timeout=-1.0), InvalidInputError, 'timeout: expected'),
    (dict(position_tolerance=0.0), InvalidInputError, 'position_tolerance'),
    (dict(weights=np.zeros(6)), InvalidInputError, 'weights'),
])
def test_bad_requests_raise_typed_errors(kwargs, error, match):
    model = load(DEMO_ARM)
    solver = IKSolver(model)
    args = dict(tip_frame='tool0', T_target=np.eye(4))
    args.update(kwargs)
    with pytest.raises(error, match=match):
        solver.solve(args.pop('tip_frame'), args.pop('T_target'), **args)


# --- closed-form planar IK ---------------------------------------------------------------------

def test_planar_2r_both_branches_and_reachability():
    l1, l2 = 0.7, 0.4
    rng = np.random.default_rng(67)
    for q1, q2 in rng.uniform(-np.pi, np.pi, size=(50, 2)):
        x, y = l1 * np.cos(q1) + l2 * np.cos(q1 + q2), l1 * np.sin(q1) + l2 * np.sin(q1 + q2)
        sols = planar_2r_ik(l1, l2, x, y)
        assert len(sols) == 2 and sols[0][1] >= 0 >= sols[1][1]
        for a, b in sols:
            np.testing.assert_allclose([l1 * np.cos(a) + l2 * np.cos(a + b),
                                        l1 * np.sin(a) + l2 * np.sin(a + b)], [x, y], atol=1e-12)
        assert any(np.allclose(np.exp(1j * np.array(s)), np.exp(1j * np.array([q1, q2])))
                   for s in sols)
    assert planar_2r_ik(l1, l2, 1.2, 0.0) == []                  # r > l1 + l2
    assert planar_2r_ik(l1, l2, 0.2, 0.0) == []                  # r < |l1 - l2|
    assert len(planar_2r_ik(l1, l2, 1.1, 0.0)) == 1              # stretched: one solution
    assert len(planar_2r_ik(l1, l2, 0.3, 0.0)) == 1              # folded: one solution


def test_planar_3r_agrees_with_the_numerical_solver():
    l1, l2, l3 = 0.5, 0.4, 0.2
    rows = [(0, 0, 0, 0, 'revolute'), (l1, 0, 0, 0, 'revolute'), (l2, 0, 0, 0, 'revolute')]
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        model = RobotModel.from_dh(rows, tool=(np.array([l3, 0, 0]), np.zeros(3)))
        solver = IKSolver(model)
    rng = np.random.default_rng(68)
    for i in range(10):
        q = rng.uniform(-np.pi, np.pi, 3)
        T = model.frame_pose(q, 'tool')
        x, y, phi = T[0, 3], T[1, 3], np.arctan2(T[1, 0], T[0, 0])
        closed = planar_3r_ik(l1, l2, l3, x, y, phi)
        assert closed
        for sol in closed:
            np.testing.assert_allclose(model.frame_pose(np.array(sol), 'tool'), T, atol=1e-12)
        seed = np.array(closed[0]) + rng.normal(scale=0.05, size=3)
        numeric = solver.solve('tool', T, seed, position_tolerance=1e-9,
                                 orientation_tolerance=1e-9, weights=[1, 1, 0, 0, 0, 1],
                                 timeout=0.5, rng=i)
        assert numeric.success, numeric.message
        np.testing.assert_allclose(np.angle(np.exp(1j * numeric.q)),
                                   np.angle(np.exp(1j * np.array(closed[0]))), atol=1e-6)


@pytest.mark.parametrize('robot', COMPARED + ['tree'])
def test_chain_pose_and_jacobian_equal_the_whole_tree(robot):
    """The IK's chain kinematics (z-aligned joint frames, only the joints that move the frame;
    batched and for one configuration) against the full forward kinematics, for every frame:
    prismatic, continuous and mimic joints included.
    """
    model = RobotModel.from_urdf_string(TREE_URDF) if robot == 'tree' else load(erd(robot))
    Q = np.random.default_rng(65).uniform(-1.0, 1.0, (5, model.nq))
    poses = model.frame_poses(Q)
    for frame in model.frame_names:
        chain = Chain(model, frame)
        T, J = chain.pose_and_jacobian(Q)
        full = model.jacobian(Q, frame)
        np.testing.assert_allclose(T, poses[:, model.frame_index(frame)], atol=1e-12)
        np.testing.assert_allclose(chain.pose(Q[2, chain.moved]),
                                   poses[2, model.frame_index(frame)], atol=1e-12)
        np.testing.assert_allclose(J, full[..., chain.moved], atol=1e-12)
        frames_one, T_one = chain.frames_one(Q[3, chain.moved])
        JT_one = chain.jacobian_one(frames_one, T_one)
        np.testing.assert_allclose(T_one, poses[3, model.frame_index(frame)], atol=1e-12)
        np.testing.assert_allclose(JT_one.T, full[3][..., chain.moved], atol=1e-12)
        assert not np.any(np.delete(full, chain.moved, axis=-1))    # the others do not move it


def test_a_chains_kept_seed_frames_follow_each_new_seed_across_threads():
    """:meth:`Chain.seed_frames` keeps the last seed's frames: a seed given again, after
    another, gets its own (Pinocchio's pose), read-only, and whole numbers are not the float
    with their bytes; and solves alternating two seeds on four threads -- one seed a robot at
    its target, the other far -- answer 'seed' for the one and not for the other every time (a
    frame kept of the other seed would swap them).
    """
    arm = Arm(erd('icub_description/robots/icub.urdf'), 'l_sole')
    chain = arm.solver.chain(arm.tip)
    rng = np.random.default_rng(67)
    q_at, q_far = arm.random_q(rng), arm.model.middle_configuration()
    T_target = arm.pose(q_at)
    for q in (q_at, q_far, q_far, q_at):
        frames, T = chain.seed_frames(q[chain.moved])
        np.testing.assert_allclose(T, arm.pose(q), atol=1e-12)
        with pytest.raises(ValueError):
            T[0, 3] = 1.0
        with pytest.raises(ValueError):
            frames[0][0, 3] = 1.0
    ones, tiny = arm.model.middle_configuration(), arm.model.middle_configuration()
    ones[chain.moved], tiny[chain.moved] = 1.0, 5e-324
    for x, q in ((np.ones(len(chain.moved), dtype=np.int64), ones),
                 (np.full(len(chain.moved), 5e-324), tiny)):
        np.testing.assert_allclose(chain.seed_frames(x)[1], arm.pose(q), atol=1e-12)
    answers = []                                     # (seed's name, method, error [m])

    def solve_both():
        for _ in range(200):
            for name, q in (('at', q_at), ('far', q_far)):
                result = arm.solver.solve(arm.tip, T_target, q, timeout=0.5)
                answers.append((name, result.method if result.success else 'failed',
                                np.linalg.norm(arm.pose(result.q)[:3, 3] - T_target[:3, 3])))

    threads = [threading.Thread(target=solve_both) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(answers) == 1600 and max(e for _, _, e in answers) < 1e-5
    assert {m for name, m, _ in answers if name == 'at'} == {'seed'}
    assert {m for name, m, _ in answers if name == 'far'} == {'analytic spherical_wrist'}


def test_joints_that_do_not_move_the_tip_keep_the_seed():
    """A humanoid's arm IK leaves the legs, the torso's other branches and the other arm
    where the seed has them, also when a random restart found the answer.
    """
    model = load(erd(TALOS))
    solver = IKSolver(model)
    tip = 'gripper_left_base_link'
    chain = Chain(model, tip)
    rng = np.random.default_rng(66)
    seed = model.middle_configuration() + rng.uniform(-0.05, 0.05, model.nq)
    q_true = seed.copy()
    lo, hi = model.lower_limits[chain.moved], model.upper_limits[chain.moved]
    q_true[chain.moved] = rng.uniform(lo, hi)
    T = model.frame_pose(q_true, tip)
    result = solver.solve(tip, T, seed, timeout=1.0, rng=3)
    assert_solution(model, tip, T, result)
    others = np.setdiff1d(np.arange(model.nq), chain.moved)
    assert len(others) > 20
    np.testing.assert_array_equal(result.q[others], seed[others])


@pytest.mark.parametrize('robot, tip, held, method', [
    (PANDA, 'panda_hand', 6, 'analytic spherical_wrist'),      # the other six: a family
    (PANDA, 'panda_hand', 0, 'numerical'),
    (BAXTER, 'left_gripper', 0, 'numerical'),
    (UR5, 'tool0', 5, 'numerical'),                           # a turn of range: not wrapped
])
def test_a_joint_held_by_the_caller_keeps_its_value_outside_its_limits(robot, tip, held, method):
    """``active_joints`` leaves out a joint the seed has 0.3 rad past its upper limit (a robot
    that was pushed there): every solution, of a pose and of a path, keeps it there -- the
    search clipped it into the limits and the analytic ranking moved it by a turn.
    """
    model = load(erd(robot))
    solver = IKSolver(model)
    chain = Chain(model, tip)
    j = chain.moved[held]
    seed = model.middle_configuration()
    seed[j] = model.upper_limits[j] + 0.3
    q_true = seed.copy()
    q_true[chain.moved] += np.where(chain.moved == j, 0.0, 0.1)
    active = [model.q_names[i] for i in chain.moved if i != j]
    T = model.frame_pose(q_true, tip)
    result = solver.solve(tip, T, seed, active_joints=active, max_solutions=8, timeout=0.5,
                          rng=1)
    assert result.success and result.method == method, result.message
    others = np.flatnonzero(np.arange(model.nq) != j)
    for q in result.solutions:
        assert q[j] == seed[j]
        assert np.all(q[others] >= model.lower_limits[others])
        assert np.all(q[others] <= model.upper_limits[others])
        T_q = model.frame_pose(q, tip)
        assert np.linalg.norm(T_q[:3, 3] - T[:3, 3]) <= 1e-5
        assert np.linalg.norm(log_so3(T[:3, :3] @ T_q[:3, :3].T)) <= 1e-5
    # From the seed's pose, the active joints turning 0.02 rad (reachable with the joint held).
    T_line = np.array([model.frame_pose(seed + np.where(np.arange(model.nq) == j, 0.0, s), tip)
                       for s in np.linspace(0.0, 0.02, 5)])
    path = solver.solve_path(tip, T_line, seed, active_joints=active)
    assert path.success, path.message
    np.testing.assert_array_equal(path.q[:, j], seed[j])


def test_targets_with_joints_at_their_limits_are_solved():
    """Configurations with joints exactly at a limit: the solver holds a joint the step would
    push out and moves the others, instead of clipping a step computed for all of them.
    """
    model = load(erd(PANDA))
    solver = IKSolver(model)
    solver.prepare('panda_hand', samples=5000)
    chain = solver.chain('panda_hand')
    rng = np.random.default_rng(68)
    seed = model.middle_configuration()
    for i in range(20):
        q = seed.copy()
        q[chain.moved] = rng.uniform(chain.lower, chain.upper)
        at = rng.choice(len(chain.moved), size=2, replace=False)
        bound = np.where(rng.random(2) < 0.5, chain.lower[at], chain.upper[at])
        q[chain.moved[at]] = bound
        T = model.frame_pose(q, 'panda_hand')
        result = solver.solve('panda_hand', T, seed, timeout=0.5, rng=i)
        assert_solution(model, 'panda_hand', T, result)


def test_pose_error_is_the_position_difference_and_the_rotation_logarithm():
    rng = np.random.default_rng(69)
    T_target = np.eye(4)
    T_target[:3, :3], T_target[:3, 3] = exp_so3(rng.normal(size=3)), rng.normal(size=3)
    T = np.tile(np.eye(4), (40, 1, 1))
    angles = np.concatenate([np.geomspace(1e-9, 1.0, 10), rng.uniform(0, np.pi, 25),
                             np.pi - np.geomspace(1e-7, 1e-2, 5)])
    axes = rng.normal(size=(40, 3))
    axes /= np.linalg.norm(axes, axis=1, keepdims=True)
    T[:, :3, :3] = exp_so3(-(angles[:, None] * axes)) @ T_target[:3, :3]
    T[:, :3, 3] = rng.normal(size=(40, 3))
    e = pose_error(T, T_target)
    np.testing.assert_allclose(e[:, :3], T_target[:3, 3] - T[:, :3, 3], atol=1e-15)
    expected = log_so3(T_target[:3, :3] @ np.swapaxes(T[:, :3, :3], 1, 2))
    np.testing.assert_allclose(e[:, 3:], expected, atol=1e-9)
    np.testing.assert_allclose(np.linalg.norm(e[:, 3:], axis=1), angles, rtol=1e-6, atol=1e-15)
    np.testing.assert_allclose(pose_error(T[3], T_target), e[3])


def test_seed_table_returns_the_configurations_nearest_the_target():
    """Against a brute-force search over the same samples with the table's pose metric: what it
    returns are near samples, nearest first, for targets in and off the sampled workspace, by
    pose and by position alone -- the k-th at most ``1 + QUERY_EPS`` times as far as the true k-th
    nearest (approximate queries), and the true nearest in most queries.
    """
    model = load(erd(UR5))
    solver = IKSolver(model)
    chain = solver.chain('tool0')
    table = SeedTable(chain, chain.lower, chain.upper, 3000, np.random.default_rng(70))
    assert len(table) == 3000

    def features(X):
        T = chain.poses(X)
        return np.concatenate([T[:, :3, 3], ROTATION_LENGTH * T[:, :3, :3].reshape(-1, 9)], 1)

    all_features = features(table.configurations)
    np.testing.assert_allclose(chain.poses(table.configurations), model.frame_pose(
        table.configurations, 'tool0'), atol=1e-12)
    rng = np.random.default_rng(71)
    exact = 0
    for i in range(12):
        _, T = random_reachable(model, rng, 'tool0')
        if i == 11:
            T[:3, 3] += [0.0, 0.0, 5.0]                   # off the sampled workspace
        target = np.concatenate([T[:3, 3], ROTATION_LENGTH * T[:3, :3].ravel()])
        for position_only, width in ((False, 12), (True, 3)):
            found, d2 = table.nearest(T, 5, position_only, distances=True)
            assert found.shape == (5, len(chain.moved))
            got = np.linalg.norm(features(found)[:, :width] - target[:width], axis=1)
            np.testing.assert_allclose(np.sqrt(d2), got, atol=1e-12)
            if not position_only:
                np.testing.assert_allclose(
                    [feature_distance2(T_found, T) for T_found in chain.poses(found)], d2,
                    rtol=1e-9, atol=1e-15)
            d = np.sort(np.linalg.norm(all_features[:, :width] - target[:width], axis=1))[:5]
            assert np.all(np.diff(got) >= 0.0)                              # nearest first
            assert np.all(got >= d - 1e-12) and np.all(got <= (1.0 + QUERY_EPS) * d + 1e-12)
            exact += bool(np.allclose(got, d, rtol=0, atol=1e-12))
        one, d2 = table.nearest(T, 1, distances=True)
        assert one.shape == (1, len(chain.moved)) and d2.shape == (1,)
    assert exact >= 12
    assert len(table.nearest(T, 10 ** 6)) == 3000


def test_seed_table_starts_a_damped_step_ahead_of_the_nearest_samples():
    """Against Pinocchio on Baxter's arm: each sample's stored step is the damped
    pseudo-inverse ``J^T (J J^T + lambda I)^-1`` of Pinocchio's world-aligned Jacobian of the
    tip there; the starts are the nearest samples moved by it along the pose error (the
    rotation's sine times its axis, from SciPy's rotation vector), and Pinocchio's forward
    kinematics finds them nearer the target than the samples.
    """
    import pinocchio as pin
    from scipy.spatial.transform import Rotation

    from ros_dynamics.engine.ik_search import PoseError
    from ros_dynamics.engine.ik_seeds import STEP_DAMPING

    arm = Arm(erd(BAXTER), 'left_gripper')
    model, ref = arm.model, arm.ref
    assert model.nq == model.nv                       # columns of q and of v are the same
    chain = arm.solver.chain('left_gripper')
    table = SeedTable(chain, chain.lower, chain.upper, 3000, np.random.default_rng(73))
    middle = model.middle_configuration()

    def q_of(x):
        q = middle.copy()
        q[chain.moved] = x
        return q

    def pinv(x):
        J = pin.computeFrameJacobian(ref.pm, ref.pd, ref.q(q_of(x)), arm.frame,
                                     pin.ReferenceFrame.LOCAL_WORLD_ALIGNED)
        J = (J @ ref.G)[:, chain.moved]
        return J.T @ np.linalg.inv(J @ J.T + STEP_DAMPING * np.eye(6))

    for i in (0, 1234, 2999):
        expected = pinv(table.configurations[i])
        np.testing.assert_allclose(table.steps[i], expected, rtol=1e-4,
                                   atol=1e-5 * np.abs(expected).max())

    def error(x, T):
        T_x = arm.pose(q_of(x))
        rotvec = Rotation.from_matrix(T[:3, :3] @ T_x[:3, :3].T).as_rotvec()
        angle = np.linalg.norm(rotvec)
        return np.concatenate([T[:3, 3] - T_x[:3, 3], np.sin(angle) / angle * rotvec])

    rng = np.random.default_rng(74)
    ratios = []
    for _ in range(20):
        _, T = random_reachable(model, rng, 'left_gripper')
        starts, nearest = table.starts(PoseError(T), T, 4), table.nearest(T, 4)
        expected = [x + pinv(x) @ error(x, T) for x in nearest]
        np.testing.assert_allclose(starts, expected, atol=1e-5)
        ratios += [np.linalg.norm(error(x, T)) / np.linalg.norm(error(x0, T))
                   for x, x0 in zip(starts[:1], nearest[:1])]
    assert np.median(ratios) < 0.5, ratios


def test_solver_keeps_one_table_per_frame_and_solves_every_frame_of_a_tree():
    """Root frame (nothing moves it), continuous, revolute and prismatic chains."""
    model = RobotModel.from_urdf_string(TREE_URDF)
    solver = IKSolver(model)
    assert solver.seed_table('left') is None
    with pytest.raises(InvalidInputError, match='samples: expected a whole number in 1..'):
        solver.prepare('left', samples=0)
    with pytest.raises(UnknownFrameError, match="unknown frame 'nope'"):
        solver.prepare('nope')
    rng = np.random.default_rng(72)
    for frame in model.frame_names:
        table = solver.prepare(frame, samples=500)
        assert solver.seed_table(frame) is table and solver.chain(frame) is \
            solver.chain(frame)
        q = np.clip(rng.uniform(-1, 1, model.nq), model.lower_limits, model.upper_limits)
        T = model.frame_pose(q, frame)
        result = solver.solve(frame, T, timeout=0.5, rng=0)
        assert_solution(model, frame, T, result)


def test_joints_with_a_turn_of_range_wrap_and_stay_near_the_seed():
    """UR joints limited to [-pi, pi] (ur3, joint-limited) or [-2 pi, 2 pi] (ur5): the
    iterate may cross a limit a turn away from the other instead of stalling at it, and the
    solution is the turn of each joint nearest the seed inside the limits.
    """
    model = load(erd('ur_description/urdf/ur3_joint_limited_robot.urdf'))
    solver = IKSolver(model)
    assert np.allclose(model.upper_limits, np.pi)
    solver.prepare('tool0', samples=5000)
    rng = np.random.default_rng(73)
    seed = model.middle_configuration()
    for i in range(20):                   # two joints within 0.1 rad of a limit
        q = rng.uniform(-np.pi, np.pi, model.nq)
        q[rng.choice(model.nq, 2, replace=False)] = rng.choice([-1, 1], 2) * (np.pi - rng.uniform(
            0, 0.1, 2))
        T = model.frame_pose(q, 'tool0')
        assert_solution(model, 'tool0', T, solver.solve('tool0', T, seed, rng=i, timeout=0.5))
    model = load(erd(UR5))
    solver = IKSolver(model)
    assert np.allclose(model.upper_limits[[0, 3, 5]], 2 * np.pi)     # the elbow: [-pi, pi]
    q_true = np.array([4.0, -1.0, 1.2, -5.0, 0.5, 3.5])
    T = model.frame_pose(q_true, 'tool0')
    seed = q_true + 0.02
    result = solver.solve('tool0', T, seed, timeout=0.5, rng=0)
    assert_solution(model, 'tool0', T, result)
    assert np.abs(result.q - seed).max() < 0.25
