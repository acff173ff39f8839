"""A seven-joint arm whose first three axes meet -- a spherical shoulder, the KUKA LBR iiwa's
geometry -- solved with its first joint held (:class:`ros_dynamics.engine.ik_held.Shoulder`):
the held angles at which the other six reach a target are intervals known in closed form,
checked here by least squares on Pinocchio's forward kinematics, and the answers with
Pinocchio's pose.
"""
import math

import numpy as np
from pinocchio_reference import Arm
import pytest
from robots import ICUB, ROMEO, erd, serial_urdf
from scipy.optimize import least_squares

from ros_dynamics.engine import ik_held
from ros_dynamics.engine.ik_answers import held_result

# The LBR iiwa 7 R800's datasheet: shoulder 0.34 m above the base, 0.40 m to the elbow and 0.40
# m on to the wrist, flange 0.126 m past it; limits +-170, 120, 170, 120, 170, 120, 175 degrees.
AXES = ['0 0 1', '0 1 0', '0 0 1', '0 -1 0', '0 0 1', '0 1 0', '0 0 1']
HEIGHTS = [0.15, 0.19, 0.20, 0.20, 0.20, 0.20, 0.081]
LIMITS = np.radians([170, 120, 170, 120, 170, 120, 175])


def shoulder_arm(directory, sideways=0.0):
    """The arm's description (in ``directory``), its second joint moved ``sideways`` [m] off the
    shoulder's point; its path. Its joints are ``j1`` ... ``j7``, its tip ``tool``.
    """
    joints = [(f'{sideways if i == 1 else 0.0} 0 {HEIGHTS[i]}', AXES[i], -LIMITS[i], LIMITS[i])
              for i in range(7)]
    path = directory / f'shoulder_{sideways}.urdf'
    path.write_text(serial_urdf('shoulder', joints, tool='0 0 0.045', tool_rpy='0 0 0'))
    return str(path)


@pytest.fixture(scope='module')
def arm(tmp_path_factory):
    a = Arm(shoulder_arm(tmp_path_factory.mktemp('shoulder')), 'tool')
    a.solver.prepare('tool')
    return a


def shoulder_of(arm):
    held = ik_held.held_joints(arm.solver.chain('tool'))
    return held, held.shoulder


def test_the_first_joint_is_a_shoulder_and_one_off_its_point_is_not(arm, tmp_path):
    held, shoulder = shoulder_of(arm)
    assert list(held.held) == [0] and shoulder is not None
    off = Arm(shoulder_arm(tmp_path, sideways=0.01), 'tool')
    held_off = ik_held.held_joints(off.solver.chain('tool'))
    assert held_off is not None and held_off.shoulder is None


def reaches(arm, T, q, free, starts):
    """The smallest pose error (position [m] plus rotation [rad]) least squares on Pinocchio's
    forward kinematics reaches with the joints ``free`` (6,) (indices into ``q``) free and the
    others at their values in ``q`` (nq,), from each of ``starts`` (k, 6), the limits ignored.
    """
    residual = arm.pose_residual(q, free, T)
    best = np.inf
    for x0 in starts:
        fit = least_squares(residual, x0, xtol=1e-15, ftol=1e-15, gtol=1e-15, max_nfev=400)
        best = min(best, float(np.abs(fit.fun).max()))
        if best < 1e-10:
            break
    return best


def check_intervals(arm, T, q, held, rng):
    """The shoulder's intervals for ``T`` (4, 4) with the other held joints at their values in
    ``q`` (nq), the configuration that made it: ``q``'s shoulder angle lies in one; inside each
    (near both ends and in the middle) least squares over the six reaches ``T``, and 0.05 rad
    past each end, from eight starts, it does not.
    """
    chain = arm.solver.chain(arm.tip)
    k = held.before - 1
    values = q[chain.moved[held.held]]
    others = values.copy()
    others[k] = 0.0
    intervals = held.shoulder.reaching(held.turned(T, tuple(others.tolist())))
    assert intervals and all(hi >= lo for lo, hi in intervals)
    assert inside(intervals, values[k])
    free = chain.moved[held.free]
    starts = np.concatenate([q[None, free], rng.uniform(-np.pi, np.pi, size=(7, 6))])
    j = chain.moved[held.held[k]]
    for lo, hi in intervals:
        for v in (lo + 1e-3, 0.5 * (lo + hi), hi - 1e-3):
            q_v = q.copy()
            q_v[j] = v
            assert reaches(arm, T, q_v, free, starts) < 1e-9
        for v in (lo - 0.05, hi + 0.05):
            if not inside(intervals, v):
                q_v = q.copy()
                q_v[j] = v
                assert reaches(arm, T, q_v, free, starts) > 1e-6


def inside(intervals, v):
    """Whether the angle ``v`` lies in one of ``intervals``, give or take a turn."""
    return any(lo - 1e-12 <= v + k * 2.0 * np.pi <= hi + 1e-12 for lo, hi in intervals
               for k in (-1, 0, 1))


def test_its_intervals_are_where_the_other_six_reach_the_target(arm):
    """For targets of random configurations, the intervals are where the six reach them
    (:func:`check_intervals`).
    """
    held, _ = shoulder_of(arm)
    rng = np.random.default_rng(7)
    for _ in range(8):
        q = rng.uniform(-LIMITS, LIMITS)
        check_intervals(arm, arm.pose(q), q, held, rng)


def test_random_targets_are_answered_with_the_first_joint_held(arm):
    """200 random targets from a mid-range seed: every one answered, on Pinocchio's pose and
    inside the limits, all but a few with the first joint held (closed form); where the seed's
    first angle reaches the target well inside an interval, the answer keeps it.
    """
    _, shoulder = shoulder_of(arm)
    model = arm.model
    rng = np.random.default_rng(8)
    seed = model.middle_configuration()
    held = kept = keepable = 0
    for _ in range(200):
        T = arm.pose(rng.uniform(-LIMITS, LIMITS))
        result = arm.solver.solve('tool', T, seed, timeout=0.5)
        assert result.success, result.message
        assert np.abs(arm.pose(result.q) - T).max() < 1e-5
        assert np.all(result.q >= model.lower_limits) and np.all(result.q <= model.upper_limits)
        held += 'j1 held' in result.method
        if any(lo + ik_held.INSIDE <= seed[0] <= hi - ik_held.INSIDE
               for lo, hi in shoulder.reaching(T)):
            keepable += 1
            kept += result.q[0] == seed[0]
    assert held >= 195
    assert keepable >= 40 and kept >= 0.9 * keepable


def test_seeds_near_their_targets_are_answered_next_to_them(arm):
    """Seeds 0.05 rad from the configuration that made the target, in every joint: the answer
    is the nearby one -- also where the seed's first angle misses the target's interval, and a
    value nearest it is taken.
    """
    rng = np.random.default_rng(9)
    for _ in range(60):
        q = rng.uniform(-LIMITS + 0.1, LIMITS - 0.1)
        T = arm.pose(q)
        seed = q + rng.normal(scale=0.05, size=7)
        result = arm.solver.solve('tool', T, seed, timeout=0.5)
        assert result.success, result.message
        assert np.abs(arm.pose(result.q) - T).max() < 1e-5
        assert np.abs(result.q - seed).max() < 0.25


@pytest.mark.parametrize('relative, tip, joint, answered', [
    (ROMEO, 'l_gripper', 'LShoulderPitch', 140),
    (ICUB, 'l_gripper', 'l_shoulder_pitch', 100)], ids=['romeo', 'icub'])
def test_a_shoulder_after_other_held_joints(relative, tip, joint, answered):
    """Romeo's arm on its trunk's yaw and iCub's on its three torso joints: the shoulder's
    first joint is held after them, its axis through the point where the next two meet. With
    the other held joints at a configuration's values, its intervals are where the six reach
    that configuration's pose; 200 random targets from a mid-range seed are answered, on
    Pinocchio's pose inside the limits, and more of them in closed form than by the
    neighbours' values alone (about 120 and 85 of 200: 607 and 424 of 1,000) -- the closed
    form called directly: where :meth:`IKSolver.prepare` measures the search alone faster
    (iCub's arm), one answer is the search's.
    """
    arm = Arm(erd(relative), tip)
    table = arm.solver.prepare(tip)
    model, chain = arm.model, arm.solver.chain(tip)
    held = ik_held.held_joints(chain)
    assert held.shoulder is not None
    assert model.q_names[chain.moved[held.held[held.before - 1]]] == joint
    rng = np.random.default_rng(10)
    lo, hi = model.lower_limits[chain.moved], model.upper_limits[chain.moved]
    for _ in range(4):
        q = model.middle_configuration()
        q[chain.moved] = rng.uniform(lo, hi)
        check_intervals(arm, arm.pose(q), q, held, rng)
    seed = model.middle_configuration()
    closed = 0
    for _ in range(200):
        q = model.middle_configuration()
        q[chain.moved] = rng.uniform(lo, hi)
        T = arm.pose(q)
        result = arm.solver.solve(tip, T, seed, timeout=0.5)     # the reach is measured
        found = held_result(model, chain, held, table, T, seed, 1e-5, 1e-5, None, math.inf,
                            None)
        assert result.success, result.message
        for answer in (result, found) if found is not None else (result,):
            assert np.abs(arm.pose(answer.q) - T).max() < 1e-5
            assert np.all(answer.q >= model.lower_limits)
            assert np.all(answer.q <= model.upper_limits)
        closed += found is not None
    assert closed >= answered
