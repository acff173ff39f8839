"""The answers of closed-form IK: :class:`IKResult`, and every solution of an analytic family
(:mod:`~ros_dynamics.engine.ik_analytic`, :mod:`~ros_dynamics.engine.ik_held`) checked against
the tolerances on the true chain, moved by whole turns toward the seed inside the joint limits,
deduplicated and ranked by distance to the seed.
"""
from dataclasses import dataclass, field, replace
import math
import time

import numpy as np

from . import ik_analytic, ik_held
from .ik_chain import LIMIT_SLACK, TANGENT_SLACK, turn_into_limits
from .ik_search import BATCH, PoseError, error_norms, from_seed, pose_error
from .ik_seeds import feature_distance2


@dataclass
class IKResult:
    """Outcome of :func:`solve_ik`.

    q (nq,): the solution (success) or the best configuration found; success: both errors within
    tolerance; position_error [m], orientation_error [rad] of ``q``; iterations: over all
    attempts; attempts: seeds tried; timed_out: the deadline stopped the search; message;
    solutions: distinct converged configurations ranked by distance to the seed (``q`` first);
    method: what answered -- ``'analytic <family>'`` (:mod:`~ros_dynamics.engine.ik_analytic`;
    ``'analytic <family>, <joints> held'``, :mod:`~ros_dynamics.engine.ik_held`),
    ``'paired axes, <joints> held'`` (:mod:`~ros_dynamics.engine.ik_pairs`), ``'seed'``
    (one answer asked for, and the seed already reaches the target) or ``'numerical'``.
    """

    q: np.ndarray
    success: bool
    position_error: float
    orientation_error: float
    iterations: int
    attempts: int
    message: str
    timed_out: bool = False
    solutions: list = field(default_factory=list)
    method: str = 'numerical'


def analytic_result(model, chain, family, T_target, q_seed, active, p_tol, o_tol,
                    max_solutions):
    """``(answer, singular)``: every solution of ``family`` inside the limits and tolerances as
    an :class:`IKResult`, nearest the seed first -- a failure when the target is out of reach of
    an exact geometry, None when every solution lies outside the limits (the numerical search
    should try) -- and whether the target is at the wrist singularity
    (:meth:`~ros_dynamics.engine.ik_analytic.Family.any_singular`) or the shoulder's
    (:meth:`~ros_dynamics.engine.ik_analytic.Family.shoulder_singular`) and the solutions
    nearest the seed were not found. There the solutions form a continuum, of which the
    subproblems give one point. At the wrist singularity (every joint active), each branch's
    point nearest the seed is taken instead (:func:`_continuum_one`); where that fails, and at
    the shoulder's, the subproblems' point is not the one nearest the seed (a robot asked for
    where it is would move), and rounding can leave it off the target (a reachable pose
    answered 'out of reach'): the search should try from the seed, and these solutions join
    its own (:func:`with_closed_form`).
    """
    x_seed = q_seed[chain.moved]
    if active is None:
        # A geometry that was not snapped, or by a hair, leaves out early the branches that no
        # polishing could bring inside the limits (:func:`_prune_slack`); a snapped one's may
        # be far off, unless its exact ones are kept as they are.
        slack = _prune_slack(family, p_tol, o_tol)
        limits = None if slack is None else _past(chain.float_limits, slack)
        candidates = family.solve_one(T_target[:3, :3], T_target[:3, 3], limits=limits,
                                      near=tuple(x_seed.tolist()))
        off_singular = family.singular_distance(q for q, _ in candidates)
        singular = off_singular < ik_analytic.SINGULAR_ANGLE
        shoulder = family.shoulder_singular(T_target)
        if singular and not shoulder:
            result = _continuum_one(model, chain, candidates, T_target, q_seed, p_tol, o_tol,
                                    max_solutions, f'analytic {family.name}')
            if result is not None:
                return result, False
            if min(p_tol, o_tol) < ROUNDING:
                # A hair off the singularity the points moved along the line can miss such
                # tolerances too far for polishing: the subproblems' own points are polished too.
                candidates = candidates + family.solve_one(T_target[:3, :3], T_target[:3, 3],
                                                           limits=limits)
        singular = singular or shoulder
        near = singular or off_singular < (NEAR_SINGULAR if min(p_tol, o_tol) < ROUNDING
                                           else NEAR_SINGULAR_LOOSE)
        result = _analytic_one(model, chain, family, candidates, T_target, q_seed, p_tol, o_tol,
                               max_solutions, near)
        if near:
            seeded = _seed_own(model, chain, T_target, q_seed, p_tol, o_tol, singular)
        elif family.snapped and result is not None and \
                np.abs(result.q[chain.moved] - x_seed).max() <= SEED_BRANCH:
            # Near any singularity a snapped geometry's point of the seed's branch can lie
            # tenths of a radian along a direction the pose barely sees: a robot asked for
            # where it is stays (calibrated TALOS arm: 8 of 900 such seeds answered 0.01-0.11
            # rad off).
            seeded = seed_result(model, chain, T_target, q_seed, p_tol, o_tol)
        else:
            seeded = None
        if seeded is not None:
            if result is None:             # the branches polished in a batch join the seed's
                result = _analytic_batched(model, chain, family, T_target, q_seed, active,
                                           p_tol, o_tol, max_solutions)[0]
            return _led_by(seeded, result, q_seed, max_solutions), False
        if result is not None:
            return result, singular
    return _analytic_batched(model, chain, family, T_target, q_seed, active, p_tol, o_tol,
                             max_solutions)


def _analytic_batched(model, chain, family, T_target, q_seed, active, p_tol, o_tol,
                      max_solutions):
    """:func:`analytic_result` the general way: every branch solved in a batched call (the
    joints outside ``active`` (m, bool; None: all) at the seed's values), polished for an
    approximate family, ranked.
    """
    x_seed = q_seed[chain.moved]
    act = np.ones(len(chain.moved), dtype=bool) if active is None else active
    Q, exact = family.solve(T_target[None, :3, :3], T_target[None, :3, 3])
    X = np.repeat(x_seed[None], Q.shape[1], axis=0)
    X[:, act] = Q[0]
    singular = family.any_singular(X[:, act]) or \
        family.shoulder_singular(T_target)
    if family.approximate:
        e = ik_analytic.polish(chain, X, T_target, act, 0.1 * min(p_tol, o_tol))
    else:
        e = pose_error(chain.poses(X), T_target)
    p_err, o_err = np.linalg.norm(e[:, :3], axis=1), np.linalg.norm(e[:, 3:], axis=1)
    method = f'analytic {family.name}'
    ok = (p_err <= p_tol) & (o_err <= o_tol)
    if not ok.any():
        if family.approximate or exact.any():
            return None, singular
        # The nearest configuration, moved into the limits (by turns, else clipped).
        k = int(np.argmin(p_err + o_err))
        lower, upper, turning = joint_bounds(model, chain, x_seed, active)
        x = ik_analytic.in_limits(X[k:k + 1], x_seed, lower, upper, turning)[0][0]
        x = np.clip(np.where(np.isnan(x), X[k], x), lower, upper)
        q = q_seed.copy()
        q[chain.moved] = x
        e = pose_error(chain.poses(x[None])[0], T_target)
        p, o = float(np.linalg.norm(e[:3])), float(np.linalg.norm(e[3:]))
        return IKResult(q, False, p, o, 0, 1, 'out of reach: no configuration reaches the '
                        f'target; the nearest has position error {p:.3g} m, orientation error '
                        f'{o:.3g} rad', method=method), singular
    return ranked(model, chain, X[ok], p_err[ok], o_err[ok], q_seed, max_solutions, method,
                  T_target, (p_tol, o_tol), active), singular


#: [rad] Joint 5 within this angle of the wrist singularity (and not at it): the subproblems'
#: angles 4 and 6 lose accuracy as they near it (by about rounding over the angle off), so a
#: seed that reaches the target, or is near it, answers first (:func:`_seed_own`) -- for
#: tolerances below :data:`ROUNDING`, which the seed's branch there can miss (UR5 and Kinova
#: 1e-3 rad off at 1e-12: the next branch answered, radians away) ...
NEAR_SINGULAR = 1e-2
#: ... and within this one for others, where a seed at its target came back 6e-4 rad off
#: 1e-5 rad from the singularity, 1e-8 to 1e-6 at 1e-3 (the seed's answer joined with the
#: closed form's costs 2.5-3.5 times the closed form's alone).
NEAR_SINGULAR_LOOSE = 1e-4


def _seed_own(model, chain, T_target, q_seed, p_tol, o_tol, at):
    """The seed's own answer for a target near the wrist singularity (``at`` it: its
    continuum's point nearest the seed not found), or None: the seed itself when it reaches
    the target, else, at the singularity, its iteration when near (:func:`seed_answer`) -- for
    tolerances below :data:`ROUNDING`, Gauss-Newton steps from the seed and from that
    iteration's answer to :data:`ROUNDING`, the damped iteration's steps being too short along
    the singular direction to reach them. Near the singularity the subproblems' point of the
    seed's branch can lie 6e-4 rad off a seed that reaches the target, or miss tolerances
    below :data:`ROUNDING` and be left out (the next branch radians away); at it, a limit or
    the arm's reach can cut the continuum short of the point nearest the seed.
    """
    x_seed = q_seed[chain.moved]
    seed_pose = chain.seed_frames(x_seed)
    T_seed = seed_pose[1]
    if min(p_tol, o_tol) >= ROUNDING:
        if at:
            return seed_answer(model, chain, T_target, q_seed, seed_pose, None, p_tol, o_tol)
        return seed_result(model, chain, T_target, q_seed, p_tol, o_tol, T_seed)
    errors = _errors_one(T_seed, T_target)
    exact = seed_result(model, chain, T_target, q_seed, p_tol, o_tol, T_seed, errors)
    if exact is not None:
        return exact
    # A hair off the singularity, the answer to rounding can lie far along the line where the
    # pose barely changes, the seed within the steps' reach -- or the other way round.
    warm = warm_result(model, chain, T_target, q_seed, seed_pose, None, ROUNDING, ROUNDING,
                       errors=errors)
    X = np.array([x_seed] + ([] if warm is None else [warm.q[chain.moved]]))
    e = ik_analytic.polish(chain, X, T_target, np.ones(X.shape[1], dtype=bool),
                           0.5 * min(p_tol, o_tol), near=PAST_SNAPPING)
    p_err, o_err = np.linalg.norm(e[:, :3], axis=1), np.linalg.norm(e[:, 3:], axis=1)
    lower, upper = model.lower_limits[chain.moved], model.upper_limits[chain.moved]
    ok = (p_err <= p_tol) & (o_err <= o_tol) & np.all((X >= lower) & (X <= upper), axis=1)
    if not ok.any():
        return None
    k = int(np.flatnonzero(ok)[0])
    q = q_seed.copy()
    q[chain.moved] = X[k]
    p_err, o_err = float(p_err[k]), float(o_err[k])
    return IKResult(q, True, p_err, o_err, 0, 1, 'converged from the seed (Gauss-Newton)',
                    solutions=[q.copy()])


def _led_by(seeded, others, q_seed, max_solutions):
    """The seed's own answer ``seeded`` (an :class:`IKResult`, one solution) among the
    solutions of ``others`` (an :class:`IKResult` already checked and ranked, or None or a
    failure), in order of distance to ``q_seed`` (nq,) -- less those within the distance that
    makes two the same of it -- at most ``max_solutions`` (None: all); the first one's method
    and errors. Unlike :func:`with_closed_form`, the others are not checked on the chain again.
    """
    if others is None or not others.success:
        return seeded
    Q = np.array(others.solutions)
    kept = np.linalg.norm(Q - seeded.q, axis=1) >= _DISTINCT
    Q = Q[kept]
    k = int(np.searchsorted(np.linalg.norm(Q - q_seed, axis=1),
                            np.linalg.norm(seeded.q - q_seed)))
    solutions = list(Q[:k]) + [seeded.q] + list(Q[k:])
    solutions = solutions[:max_solutions] if max_solutions else solutions
    first = seeded if k == 0 else others
    return IKResult(solutions[0], True, first.position_error, first.orientation_error,
                    seeded.iterations, seeded.attempts,
                    f'{first.method}: {len(solutions)} solution(s)', solutions=solutions,
                    method=first.method)


def with_closed_form(found, analytic, chain, T_target, q_seed, max_solutions, tolerances):
    """The search's :class:`IKResult` ``found``, for a target at the wrist singularity, joined
    by :func:`analytic_result`'s answer ``analytic`` (None or a failure when it has none): every
    solution of both within the ``(position, orientation)`` tolerances on the chain (there the
    subproblems' rounding reaches 1.5e-8 rad), distinct, nearest the seed first, at most
    ``max_solutions`` (None: all).
    The search's answer is the point of the continuum nearest the seed, the subproblems' the
    other branches (and a nearer one, where the target is a hair off the singularity); when the
    search timed out, the subproblems still answer (``timed_out`` stays set).
    """
    if analytic is None or not analytic.success:
        return found
    joined = analytic.solutions
    p_err, o_err = error_norms(chain.poses(np.array(joined)[:, chain.moved]),
                               np.broadcast_to(T_target, (len(joined), 4, 4)))
    joined = [q for q, p, o in zip(joined, p_err, o_err) if p <= tolerances[0] and
              o <= tolerances[1]]
    if not joined:
        return found
    searched = found.solutions if found.success else []
    candidates = sorted(searched + joined, key=lambda q: np.linalg.norm(q - q_seed))
    keep = []
    for q in candidates:
        if all(np.linalg.norm(q - k) >= _DISTINCT for k in keep):
            keep.append(q)
    keep = keep[:max_solutions] if max_solutions else keep
    method = found.method if any(keep[0] is q for q in searched) else analytic.method
    p_err, o_err = _errors_one(chain.pose(keep[0][chain.moved]), T_target)
    return IKResult(keep[0], True, p_err, o_err, found.iterations, found.attempts,
                    f'{method}: {len(keep)} solution(s)', found.timed_out, keep, method)


def joint_bounds(model, chain, x_seed, active=None):
    """The limits (m,) and (m,) of ``chain.moved`` and which of them turn (m,), with a joint
    outside ``active`` (a mask, None for all active) pinned at its value in ``x_seed`` (m,): it
    keeps that value, even outside its limits, and no whole turn moves it.
    """
    lower, upper = model.lower_limits[chain.moved], model.upper_limits[chain.moved]
    if active is None:
        return lower, upper, chain.turning
    return (np.where(active, lower, x_seed), np.where(active, upper, x_seed),
            chain.turning & active)


def held_result(model, chain, held, table, T_target, q_seed, p_tol, o_tol, max_solutions,
                deadline, wide_call):
    """The solutions of a chain of more than six joints with the others held
    (:mod:`.ik_held`), inside the limits and tolerances, as an :class:`IKResult` nearest the
    seed first: with the held joints at their values in the seed (they then stay where they
    are) or in one of the seed table's configurations nearest the target (one of them nearly
    reaches it already), one after the other (:func:`_held_order`), before the ``deadline``
    (monotonic clock) -- the seed itself when it already reaches the target (at a singular
    configuration no branch of the six need be the seed), and its own iteration first when its
    pose is near the target (:func:`seed_answer`: seeds 1e-3 rad off in every joint were
    answered 0.05 rad or more away 2-4 % of the time by the held values, whose six's solutions
    jump near a singularity of theirs, in 0.27-0.35 ms; now next to the seed, in 0.15 ms, on
    Panda, xArm7, the iiwa and TALOS's and TIAGo's arms). At a singularity of the six, each
    branch's point of its continuum nearest the seed (:func:`_continuum_one`). Asked for several
    solutions
    (``max_solutions`` above 1), at the seed's values, then at the neighbours' values and a grid
    in one batched call, unless the ``wide_call`` (:class:`LastDuration`) of this chain would
    end past the deadline. None when there is none (the numerical search then tries).

    One answer farther than :data:`BRANCH_JUMP` from a seed nearer the target than the seed
    table's neighbours (:func:`_nearer_than_table`) -- the seed's branch leaves the limits at
    its held values, or they sit where the six's branches meet -- is joined by the seed's own
    iteration, up to :data:`LONGER_ITERATIONS` (:func:`near_seed`), the nearer first. Seeds
    0.05 and 0.1 rad from their targets' configurations in every joint (200 each) were answered
    more than 0.25 rad away 21-38 and 84-111 times by the held values alone on Panda, xArm7,
    TALOS's arm and the iiwa; so, 0-3 and 3-24 times, the median solve 0.72-0.90 ms instead of
    0.24-0.62, the p99 1.0-1.4 ms as before. (The whole numerical search from the seed, tried
    first, answered far 1-11 and 8-58 times, its p99 up to 2 ms: its first converging row is
    often another's.)
    """
    x_seed = q_seed[chain.moved]
    joints = ', '.join(model.q_names[i] for i in chain.moved[held.held])
    method = f'analytic {held.family.name}, {joints} held'
    several = max_solutions is not None and max_solutions > 1
    seed_pose = None                  # the seed's joint frames and pose, once computed
    result = None
    if not several:
        seed_pose = chain.seed_frames(x_seed)
        result = seed_answer(model, chain, T_target, q_seed, seed_pose, None, p_tol, o_tol)
        if result is not None:
            return result
        # The six joints' limits: their branches outside are left out early (as above).
        free = held.free
        slack = _prune_slack(held.family, p_tol, o_tol)
        limits = None if slack is None else \
            _past([limit for limit, f in zip(chain.float_limits, free) if f], slack)
        near = tuple(x_seed[free].tolist())
        for values in _held_order(model, chain, held, table, T_target, x_seed, seed_pose[1]):
            result = _held_one(model, chain, held, T_target, q_seed, values, p_tol, o_tol,
                               max_solutions, method, limits, near)
            if result is not None or time.monotonic() >= deadline:
                break
    else:
        result = _held_one(model, chain, held, T_target, q_seed,
                           tuple(x_seed[held.held].tolist()), p_tol, o_tol, max_solutions,
                           method, None, tuple(x_seed[held.free].tolist()))
        if result is None and wide_call.fits(deadline):
            started = time.monotonic()
            lower, upper = model.lower_limits[chain.moved], model.upper_limits[chain.moved]
            neighbours = x_seed[None][:0] if table is None else \
                table.nearest(T_target, HELD_NEIGHBOURS)
            values = ik_held.held_values(held, x_seed, lower, upper, neighbours)[1:]
            if len(values):                     # else several joints held and no seed table
                result = _held_at(model, chain, held, T_target, q_seed, values, p_tol, o_tol,
                                  max_solutions, method)
            wide_call.measured(started)
        # A seed at or near its target leads, as for one answer, where the held values' six
        # put their nearest solution more than NEXT_TO_SEED from it (0.01-0.09 rad from 15 %
        # of seeds 1e-3 off on Panda and xArm7).
        # Where the held values give none, the search (from the seed) collects them instead.
        if result is not None and np.abs(result.q[chain.moved] - x_seed).max() > NEXT_TO_SEED:
            seed_pose = chain.seed_frames(x_seed)
            seeded = seed_answer(model, chain, T_target, q_seed, seed_pose, None, p_tol, o_tol)
            if seeded is not None:
                return _led_by(seeded, result, q_seed, max_solutions)
    if result is None or np.abs(result.q[chain.moved] - x_seed).max() <= BRANCH_JUMP:
        return result
    # Where the six joints are near a singularity of their own (the whole chain need not be),
    # or the seed's branch leaves the limits at its held values, none of their solutions need
    # lie next to the seed.
    seed_pose = chain.seed_frames(x_seed) if seed_pose is None else seed_pose
    longer = not several and table is not None and \
        _nearer_than_table(table, seed_pose[1], T_target)
    return near_seed(model, chain, result, T_target, q_seed, seed_pose, None, p_tol, o_tol,
                     max_solutions, longer)


class LastDuration:
    """How long a call took last time [s], so that it is skipped where it would end past a
    deadline: a batched call's cost is mostly fixed, and depends on the chain and the machine
    (a held-joint arm's 8 neighbours' and 32 grid values, 320 rows: about 0.85 ms on Panda,
    1.3-1.6 ms on xArm7, whose snapped geometry is polished). The longest of recent calls,
    each older one counting :data:`DECAY` times less per call (one stalled by the garbage
    collector is forgotten within tens of calls). One float: threads may share it (the last
    writer wins).
    """

    #: Factor on the duration kept per later call.
    DECAY = 0.9

    def __init__(self):
        self.seconds = 0.0

    def fits(self, deadline):
        """Whether the call, started now, would end before ``deadline`` (monotonic clock)."""
        return time.monotonic() + self.seconds < deadline

    def measured(self, started):
        """The call started at ``started`` (monotonic clock) has just ended."""
        self.seconds = max(time.monotonic() - started, self.DECAY * self.seconds)


#: [rad] A seed this near one of a target's solutions at the wrist singularity (every joint, a
#: whole turn aside) is answered that point of the continuum, or the search from the seed
#: tries (:func:`_continuum_one`).
SEED_BRANCH = 0.5

#: [rad or m] A closed-form answer farther than this from a seed near its target (some joint)
#: may have left the seed's branch: the seed is iterated too (:func:`near_seed`).
BRANCH_JUMP = 0.1


def near_seed(model, chain, answer, T_target, q_seed, seed_pose, active, p_tol, o_tol,
              max_solutions, longer=False):
    """A closed form's ``answer`` farther than :data:`BRANCH_JUMP` from the seed, joined by
    the seed's own iteration (:func:`warm_result`) when the seed's pose (``seed_pose``: its
    joint frames and pose, :meth:`~ros_dynamics.engine.ik_chain.Chain.frames_one`) is
    near the target (a robot tracking it; ``longer``: nearer than the seed table, iterated
    longer, :func:`warm_result`) and the iteration converges -- its solution, next to the seed,
    then comes first -- else as it is.
    """
    near = warm_result(model, chain, T_target, q_seed, seed_pose, active, p_tol, o_tol, longer)
    if near is None:
        return answer
    return with_closed_form(near, answer, chain, T_target, q_seed, max_solutions,
                            (p_tol, o_tol))


def paired_result(model, chain, pairs, table, T_target, q_seed, p_tol, o_tol, deadline):
    """One solution of a chain whose six joints' axes come in pairs, the others held
    (:mod:`.ik_pairs`), as an :class:`IKResult`: from each of the seed table's
    :data:`PAIRED_STARTS` starting points nearest the target in turn (a damped least-squares
    step ahead of the samples, :meth:`~ros_dynamics.engine.ik_seeds.SeedTable.starts`: their
    held values and branch), the root next to it, inside the limits and tolerances -- before the
    ``deadline`` (monotonic clock; the first start is tried even past it: Baxter's arm at a
    0.1 ms timeout answers 241 of 400 targets so, the search none; at 0.5 ms 370 against 355.
    A chain whose starts fail more often pays for it at short timeouts: the simple humanoid's
    arm at 1 ms answered 406-581 of 600, 596-599 by the search alone). None -- the numerical
    search then runs -- without a seed table, when no start answers, and for a seed near the
    target by the seed table's measure (as :func:`table_result`'s, :data:`TABLE_NEAR`): the
    search's row from the seed, pulled toward it across the task's null space, answers next to
    it (Baxter's arm, seeds 0.1 rad from their targets' configurations in every joint: 3 of 200
    answers more than 0.5 rad from the seed; 26 by the search over one angle from the seed's
    held value and branch, 155 from the table's starts; G1's leg, seeds 0.2 rad off: 48 of 600
    answers more than 1.2 rad away within twice the fourth sample's distance, 24 with this
    measure, as by the search alone).
    """
    if table is None:
        return None
    x_seed = q_seed[chain.moved]
    T_seed = chain.seed_frames(x_seed)[1]
    p_err, o_err = _errors_one(T_seed, T_target)
    if p_err <= WARM_DISTANCE and o_err <= WARM_ANGLE:
        return None
    starts, d2 = table.starts(PoseError(T_target), T_target, PAIRED_STARTS, distances=True)
    if _near_by_table(T_seed, T_target, d2):
        return None
    return _from_starts(model, chain, pairs, starts, T_target, q_seed, p_tol, o_tol, deadline)


def _from_starts(model, chain, pairs, starts, T_target, q_seed, p_tol, o_tol, deadline):
    """:func:`paired_result` from the seed table's ``starts`` (k, m), wrapped and clipped into
    the limits here, whatever the seed.
    """
    chain.wrap(starts)
    np.clip(starts, chain.clip_lower, chain.clip_upper, out=starts)
    joints = ', '.join(model.q_names[i] for i in chain.moved[pairs.held.held])
    method = f'paired axes, {joints} held' if joints else 'paired axes'
    x_seed = q_seed[chain.moved].tolist()
    for k, x in enumerate(starts):
        q = pairs.solve_near(T_target, x, min(p_tol, o_tol))
        turned = q and _turned_into_limits(q, x_seed, chain.float_limits)
        if turned:
            q = q_seed.copy()
            q[chain.moved] = turned[0]
            p_err, o_err = _errors_one(chain.pose(q[chain.moved]), T_target)
            if p_err <= p_tol and o_err <= o_tol:
                return IKResult(q, True, p_err, o_err, 0, k + 1, f'{method}: 1 solution',
                                solutions=[q.copy()], method=method)
        if time.monotonic() >= deadline:
            break
    return None


def paired_share(model, chain, pairs, table, rng, targets=50):
    """The share of ``targets`` random reachable targets -- the chain's joints drawn inside
    their limits (a turn when unbounded) by ``rng``, seed mid-range, tolerances 1e-5 -- that
    :func:`paired_result` answers from ``table``'s starts (wherever the seed: where it is near,
    the search from it answers instead, but that says nothing of the search over one angle).
    """
    X = rng.uniform(chain.lower, chain.upper, size=(targets, len(chain.moved)))
    q_seed = model.middle_configuration()
    return sum(_from_starts(model, chain, pairs, table.starts(PoseError(T), T, PAIRED_STARTS), T,
                            q_seed, 1e-5, 1e-5, math.inf) is not None
               for T in chain.poses(X)) / targets


#: Seed-table starting points :func:`paired_result` tries: on Baxter's arm (400 random
#: targets) the first answers 62 %, four 91 %.
PAIRED_STARTS = 4


def table_result(chain, table, T_target, q_seed, seed_pose, p_tol, o_tol, deadline):
    """One solution from the seed table's :data:`TABLE_STARTS` starting points nearest
    ``T_target`` (a damped least-squares step ahead of the samples,
    :meth:`~ros_dynamics.engine.ik_seeds.SeedTable.starts`), each iterated alone
    (:func:`~ros_dynamics.engine.ik_search.from_seed`) while it converges fast, before the
    ``deadline`` (monotonic clock); and the search's starting points ((BATCH - 1, m), wrapped
    and clipped into the limits). The answer (an :class:`IKResult`, method 'numerical') is
    None where no start converges, with less than :data:`TABLE_TIME` left (the starts are
    then not tried), and for a seed near the target by the seed table's measure (within
    :data:`TABLE_NEAR` times the feature distance of its :data:`NEAR_RANK`-th nearest sample;
    ``seed_pose``: the seed's joint frames and pose,
    :meth:`~ros_dynamics.engine.ik_chain.Chain.frames_one`): the search's row from the seed,
    pulled toward it across the task's null space, then answers next to it. One start costs a
    third of one of the search's batched iterations (eight rows): most targets of TIAGo Pro's
    arm (and of G1's leg, before :mod:`.ik_pairs` searched it over one angle) are answered in
    two or three iterations of the nearest start alone.
    """
    starts, d2 = table.starts(PoseError(T_target), T_target, BATCH - 1, distances=True)
    chain.wrap(starts)
    np.clip(starts, chain.clip_lower, chain.clip_upper, out=starts)
    if _near_by_table(seed_pose[1], T_target, d2) or deadline - time.monotonic() < TABLE_TIME:
        return None, starts
    limits = (chain.clip_lower, chain.clip_upper)
    x_seed = q_seed[chain.moved].tolist()
    for k, x in enumerate(starts[:TABLE_STARTS]):
        if time.monotonic() >= deadline:
            break
        found = from_seed(chain, T_target, x, chain.frames_one(x), limits, p_tol, o_tol,
                          iterations=TABLE_ITERATIONS, cut=TABLE_CUT)
        turned = found and _turned_into_limits(found[0].tolist(), x_seed, chain.float_limits)
        if turned:
            x, p_err, o_err, iterations = found
            if turned[1]:                    # a hair past a limit, clipped in: check again
                x = np.array(turned[0])
                p_err, o_err = _errors_one(chain.pose(x), T_target)
            if p_err <= p_tol and o_err <= o_tol:
                q = q_seed.copy()
                q[chain.moved] = turned[0]
                return IKResult(q, True, p_err, o_err, iterations, k + 1,
                                f'converged from the seed table ({iterations} iteration(s))',
                                solutions=[q.copy()]), starts
    return None, starts


#: Seed-table starting points :func:`table_result` iterates alone, and how: at most
#: TABLE_ITERATIONS iterations, each cutting the cost to TABLE_CUT of it or less.
TABLE_STARTS, TABLE_ITERATIONS, TABLE_CUT = 2, 5, 0.5
#: A seed within this many times the feature distance of the seed table's :data:`NEAR_RANK`-th
#: nearest sample is near its target for :func:`table_result` and :func:`paired_result`
#: (:func:`_near_by_table`), which then leave it to the search's row from the seed (its answer
#: next to the seed). Farther seeds are not: G1's leg (searched numerically then) answered 16
#: of 100 seeds 0.5 rad off in every joint more than 1.2 rad from them (the search alone about
#: 10 %); iterating such seeds alone first (up to 12 iterations) brought that to 4 but cost
#: mid-range seeds 30-70 % on G1's leg and TIAGo Pro's arm.
TABLE_NEAR = 3.0
#: [s] With less time than this left, :func:`table_result` leaves all of it to the search (a
#: 1 ms timeout: 173-175 of 200 G1 leg targets answered after the two starts, 198-199 by the
#: search alone).
TABLE_TIME = 2e-3


#: Seed-table neighbours whose held values one answer tries, one after the other: four left
#: 8.3, 5.3, 20.9 and 13.9 % of 1,000 random targets (mid-range seeds) to the numerical search
#: on Panda, xArm7, TALOS's arm and TIAGo's, eight 4.2, 2.9, 12.3 and 9.5 % -- the mean solve
#: 4-9 % sooner, the median and p99 as they were (twelve: 3.3, 2.4, 9.6, 7.9 %, p99 the same).
HELD_NEIGHBOURS = 8

#: The seed-table neighbour (the fourth nearest) whose distance gauges a seed's nearness to
#: its target (:func:`_seed_near`, :func:`_nearer_than_table`).
NEAR_RANK = 4


def _held_order(model, chain, held, table, T_target, x_seed, T_seed):
    """The held joints' values (tuples of floats) one answer tries, one after the other. A
    shoulder held alone (:class:`~ros_dynamics.engine.ik_held.Shoulder`, the iiwa's first
    joint) first tries its angles nearest the seed's that reach the target. Then a seed whose
    pose ``T_seed`` (4, 4) is near the target -- within twice the feature distance of the
    seed table's :data:`NEAR_RANK`-th nearest sample (measured on Panda, xArm7 and
    TALOS: seeds 0.15 rad from the target's configuration are within 1.7 times it nine times
    in ten, random seeds beyond 2.8 times it nine times in ten) -- tries only its own: where
    they fail, the numerical search from the seed stays near it, which a neighbour's need not.
    Another seed tries the neighbours' values, then its own. Where those fail, a shoulder
    after other held joints tries each of them again with its angle the nearest theirs that
    reaches the target (Romeo's arm, iCub's, the human model's and the simple humanoid's: 6-16
    % more targets in closed form, the median as before; first, they cost 8-13 % on it). None
    is tried twice; the seed table is queried only when its values are.
    """
    seed = tuple(x_seed[held.held].tolist())
    lower = upper = None
    if held.shoulder is not None:
        j = chain.moved[held.held[held.before - 1]]
        lower, upper = float(model.lower_limits[j]), float(model.upper_limits[j])
    tried = []
    if len(held.held) == 1:            # the shoulder alone: no other held value to guess
        for values in held.reaching(T_target, seed, lower, upper):
            tried.append(values)
            yield values
    if table is None:
        order = [seed]
    else:
        neighbours, d2 = table.nearest(T_target, HELD_NEIGHBOURS, distances=True)
        order = [seed] if _seed_near(T_seed, T_target, d2[:NEAR_RANK]) else \
            [tuple(v) for v in neighbours[:, held.held].tolist()] + [seed]
    for values in order:
        if values not in tried:
            tried.append(values)
            yield values
    # Where those fail, each with the shoulder's angle nearest theirs that reaches the target.
    for raw in order:
        for values in held.reaching(T_target, raw, lower, upper)[:1]:
            if values not in tried:
                tried.append(values)
                yield values


def _nearer_than_table(table, T_seed, T_target):
    """Whether the seed's pose ``T_seed`` (4, 4) is nearer ``T_target`` (4, 4) than the seed
    table's :data:`NEAR_RANK`-th nearest sample, the table queried only where its
    :attr:`~ros_dynamics.engine.ik_seeds.SeedTable.spacing2` leaves that possible. The iiwa's:
    seeds 0.05 rad from their targets' configurations in every joint are within half that
    distance 99 times in 100; mid-range seeds for random targets are beyond it (11 of 1,000
    within 1.1-3.8 times it).
    """
    d2_seed = feature_distance2(T_seed, T_target)
    if d2_seed > table.spacing2:
        return False
    _, d2 = table.nearest(T_target, NEAR_RANK, distances=True)
    return d2_seed <= d2[-1]


def _near_by_table(T_seed, T_target, d2):
    """Whether the seed's pose ``T_seed`` (4, 4) is near ``T_target`` (4, 4) for
    :func:`table_result` and :func:`paired_result`: within :data:`TABLE_NEAR` times the feature
    distance of the seed table's :data:`NEAR_RANK`-th nearest sample (the squared distances of
    the nearest, ``d2`` (k,)).
    """
    return feature_distance2(T_seed, T_target) <= TABLE_NEAR ** 2 * d2[:NEAR_RANK][-1]


def _seed_near(T_seed, T_target, d2):
    """Whether the seed's pose ``T_seed`` (4, 4) is near ``T_target`` (4, 4): within twice the
    feature distance of the farthest of the seed table's samples nearest it, whose squared
    feature distances are ``d2`` (k,) (:func:`_held_order`).
    """
    return feature_distance2(T_seed, T_target) <= 4.0 * d2[-1]


def _held_one(model, chain, held, T_target, q_seed, values, p_tol, o_tol, max_solutions,
              method, limits, near):
    """The solutions with the held joints at ``values`` (a tuple of floats), in Python floats,
    ranked (:func:`_ranked_one`), or None; ``limits``: the six joints' for
    :meth:`~ros_dynamics.engine.ik_analytic.Family.solve_one`, or None; ``near``: the six's
    values in the seed (at a singularity of theirs, each branch's point nearest them).
    """
    turned = held.turned(T_target, values)
    k = held.before
    before, after = values[:k], values[k:]
    six = held.family.solve_one(turned[:3, :3], turned[:3, 3], True, limits, near)
    candidates = [(before + q + after, True) for q, _ in six]
    if held.family.any_singular(q for q, _ in six):        # the points nearest the seed
        return _continuum_one(model, chain, candidates, T_target, q_seed, p_tol, o_tol,
                              max_solutions, method)
    if _polishing(held.family, p_tol, o_tol):
        candidates = _polished(chain, held.family, candidates, T_target, q_seed, held.free,
                               p_tol, o_tol)
    return _ranked_one(model, chain, candidates, T_target, q_seed, p_tol, o_tol, max_solutions,
                       method, clip=not held.family.snapped)


#: [rad or m] A candidate of a geometry that was not snapped (subproblem 6's roots: accurate to
#: about 1e-10) no turn brings this near its limits is not polished.
POLISH_REACH = 0.01


#: [m or rad] One answer polishes the candidates whose pose is off by less than this (their
#: largest error component): a snapping of 2 mrad or 2 mm moves a pose by about that times the
#: arm's reach; a least-squares branch of a target out of reach is off by centimetres.
PAST_SNAPPING = 1e-2


def _polished(chain, family, candidates, T_target, q_seed, active, p_tol, o_tol):
    """The ``candidates`` (``(q, exact)``) of ``family`` (:attr:`Family.approximate`) that
    reach ``T_target`` on the true chain once polished (:func:`~ros_dynamics.engine.ik_analytic.
    polish`, moving the joints ``active`` (m, bool)), as ``(q, True, (position_error,
    orientation_error))``. A snapped geometry's least-squares branches are polished too (the
    target may be just out of the snapped geometry's reach only), and its solutions may be far
    off the true ones near a folded elbow -- but one snapped by so little that its exact
    branches are within the tolerances on the true chain anyway (:func:`unchecked`: xArm7's
    rounded offsets, 2e-6 m; iCub's legs, 7e-6) keeps those inside the
    limits as they are, unchecked (``(q, True)``; a tangency's, up to 3e-5 m off, come twice
    and :func:`_ranked_one` checks them), and polishes further (to a thousandth of
    the tolerances) those that may fit them (:data:`POLISH_REACH`: a solution at a limit comes
    out a snapping past it); a geometry that was not snapped polishes only its exact branches,
    and only those that may fit the limits.
    """
    x_seed = q_seed[chain.moved].tolist()
    limits = chain.float_limits
    tolerance = 0.5 * min(p_tol, o_tol)
    kept = []
    # Up to this many rows are checked pose by pose first (a third of a batch's cost), often
    # within: subproblem 6's roots up to three; a snapped geometry's, one only, unless every
    # one is exact and inside the limits (polished, a solution at a joint limit, a snapping
    # past it, comes back onto it).
    one_by_one = 1
    if not family.snapped:
        rows = [q for q, e in candidates
                if e and _turned_into_limits(q, x_seed, limits, POLISH_REACH) is not None]
        one_by_one = _ONE_BY_ONE
    elif unchecked(family, p_tol, o_tol):
        rows = []
        for q, e in candidates:
            if e and _turned_into_limits(q, x_seed, limits) is not None:
                kept.append((q, True))
            elif not e or _turned_into_limits(q, x_seed, limits, POLISH_REACH) is not None:
                rows.append(q)
        tolerance, one_by_one = 1e-3 * tolerance, 0
    else:
        rows = [q for q, _ in candidates]
        # Exact ones inside the limits as they are are checked first, all of them: iCub's legs
        # (axes turned by 3.7e-6 rad) had each of 899 such candidates of 600 targets within
        # 1e-5 unpolished, and polishing two or three cost 7-20 % of the solve.
        if all(e and _turned_into_limits(q, x_seed, limits, 0.0) for q, e in candidates):
            one_by_one = _ONE_BY_ONE
    if not rows:
        return kept
    if len(rows) <= one_by_one:
        checked = [(x, True, _errors_one(chain.pose(np.array(x)), T_target)) for x in rows]
        if all(e[0] <= p_tol and e[1] <= o_tol for _, _, e in checked):
            return checked
    X = np.array(rows)
    # Polished until each component is within ``tolerance`` (half the tolerances: the norms
    # then are). Only branches off by about a snapping (PAST_SNAPPING), not the least-squares
    # ones of a target out of reach.
    e = ik_analytic.polish(chain, X, T_target, active, tolerance, near=PAST_SNAPPING)
    p_err, o_err = np.linalg.norm(e[:, :3], axis=1), np.linalg.norm(e[:, 3:], axis=1)
    within = (p_err <= p_tol) & (o_err <= o_tol)
    errors = zip(p_err[within].tolist(), o_err[within].tolist())
    return kept + [(tuple(x), True, e) for x, e in zip(X[within].tolist(), errors)]


#: A snapped geometry whose bounds on how far it moves and turns the tip are within this share
#: of the tolerances keeps its exact solutions as they come (:func:`unchecked`). The bounds
#: hold at any configuration; the rest covers the subproblems' rounding, 1e-10 or less away
#: from a tangency, whose twins are checked (:func:`_ranked_one`), as is the first solution.
UNCHECKED_SHARE = 0.9


def unchecked(family, p_tol, o_tol):
    """Whether the exact solutions of ``family`` reach their targets on the true chain within
    the tolerances as they come: its roots are not numerical (subproblem 6's), and its
    :attr:`~ros_dynamics.engine.ik_analytic.Family.drift` and ``tilt`` (zero unless snapped)
    are within :data:`UNCHECKED_SHARE` of them (xArm7's rounded offsets, 2e-6 m; iCub's legs,
    an axis turned by 3.7e-6 rad: 7.2e-6 m and 7.3e-6 rad).
    """
    return family.drift <= UNCHECKED_SHARE * p_tol and \
        family.tilt <= UNCHECKED_SHARE * o_tol and family.name != 'three_parallel_offset'


def _polishing(family, p_tol, o_tol):
    """Whether one answer's candidates of ``family`` go through :func:`_polished`: a snapped
    geometry's; subproblem 6's roots only below :data:`ROUNDING` -- above, its exact ones are
    taken as an exact family's (accurate to about 1e-10; :func:`_ranked_one` checks the best,
    a tangency's twins and a clipped one on the chain).
    """
    return family.snapped or family.approximate and min(p_tol, o_tol) < ROUNDING


#: [rad or m] A geometry snapped by at most this much (:attr:`~ros_dynamics.engine.ik_analytic.
#: Family.snap`) has its branches left out early, those that no whole turn brings within
#: :data:`SNAPPED_REACH` of the limits (:func:`_prune_slack`): iCub's legs, axes turned by up
#: to 3.7e-6 rad, 0.23 -> 0.12 ms.
PRUNE_SNAP = 1e-5
#: [rad] ... a slack wide for so small a snapping (up to 0.01 rad would do on random targets:
#: UR10, Kinova, Romeo's arm, Z1, iCub's leg and TALOS's arm calibrated by 1e-5, 1,500 targets
#: each, half near the wrist singularity); near a singularity with a joint at its limit, a
#: review found solutions past the limits by more (TALOS's arm calibrated by 5e-6: the seed's
#: own 0.12 rad past, and 8-29 of 900 solves answered farther from the seed with 0.01).
SNAPPED_REACH = 0.5


def _prune_slack(family, p_tol, o_tol):
    """How far outside the limits [rad or m] a branch of ``family`` may be and still be
    carried through the scalar solve, or None for every branch: polishing takes none farther
    inside -- :data:`POLISH_REACH` for an exact geometry or one whose exact solutions are
    within the tolerances (:func:`unchecked`) and whose axes only moved across themselves,
    :data:`SNAPPED_REACH` for one snapped by at most :data:`PRUNE_SNAP` (an axis turned moves
    the solutions along a singularity's near-continuum even where they reach the target:
    iCub's leg at its wrist singularity answered 22 of 600 seeds at their targets up to 0.09
    rad away with the narrower slack); a geometry snapped by more keeps every branch, as its
    solutions may be far off the true ones near a singularity.
    """
    if not family.snapped or not family.turned and unchecked(family, p_tol, o_tol):
        return POLISH_REACH
    return SNAPPED_REACH if family.snap <= PRUNE_SNAP else None


#: Up to this many candidates are checked pose by pose before any is polished (beyond, one
#: batch costs less): subproblem 6's, and a snapped geometry's inside the limits.
_ONE_BY_ONE = 3


def _held_at(model, chain, held, T_target, q_seed, values, p_tol, o_tol, max_solutions,
             method):
    """The solutions with the held joints at each row of ``values`` (V, h), in one batched
    call, ranked (:func:`ranked`), or None.
    """
    X, exact = held.solve(T_target, values)
    X = X[exact]
    if held.family.approximate:                  # the held joints stay at their values
        e = ik_analytic.polish(chain, X, T_target, held.free, 0.1 * min(p_tol, o_tol))
    else:
        e = pose_error(chain.poses(X), T_target) if len(X) else np.empty((0, 6))
    p_err, o_err = np.linalg.norm(e[:, :3], axis=1), np.linalg.norm(e[:, 3:], axis=1)
    ok = (p_err <= p_tol) & (o_err <= o_tol)
    if not ok.any():
        return None
    return ranked(model, chain, X[ok], p_err[ok], o_err[ok], q_seed, max_solutions, method,
                  T_target, (p_tol, o_tol))


def ranked(model, chain, X, p_err, o_err, q_seed, max_solutions, method, T_target, tolerances,
           active=None):
    """An :class:`IKResult` of the solutions ``X`` (k, m) of ``chain.moved`` (their errors
    (k,) against ``T_target`` (4, 4)), moved into the limits, distinct, nearest the seed first;
    None when none is inside. One clipped in (a hair past a limit) is checked again against
    the ``(position, orientation)`` tolerances. Joints outside ``active`` (a mask, None for
    all active) keep the seed's values.
    """
    x_seed = q_seed[chain.moved]
    X, inside, clipped = ik_analytic.in_limits(X, x_seed,
                                               *joint_bounds(model, chain, x_seed, active))
    clipped &= inside
    if clipped.any():
        p_err, o_err = p_err.copy(), o_err.copy()
        p_err[clipped], o_err[clipped] = error_norms(
            chain.poses(X[clipped]), np.broadcast_to(T_target, (int(clipped.sum()), 4, 4)))
        inside &= (p_err <= tolerances[0]) & (o_err <= tolerances[1])
    if not inside.any():
        return None
    X, p_err, o_err = X[inside], p_err[inside], o_err[inside]
    distances = np.linalg.norm(X - x_seed, axis=1)
    order = np.argsort(distances, kind='stable')
    X, p_err, o_err, distances = X[order], p_err[order], o_err[order], distances[order]
    # Distinct: farther than _DISTINCT from every solution kept before it. A same solution is
    # as far from the seed within _DISTINCT: only those before it (from ``first``) are compared.
    first = np.searchsorted(distances, distances - _DISTINCT, side='right')
    kept = np.zeros(len(X), dtype=bool)
    keep = []
    for k, j in enumerate(first.tolist()):
        if j == k or not (kept[j:k] & (np.linalg.norm(X[j:k] - X[k], axis=1)
                                       < _DISTINCT)).any():
            kept[k] = True
            keep.append(k)
            if len(keep) == max_solutions:
                break
    qs = np.repeat(q_seed[None], len(keep), axis=0)
    qs[:, chain.moved] = X[keep]
    k = keep[0]
    return IKResult(qs[0], True, float(p_err[k]), float(o_err[k]), 0, 1,
                    f'{method}: {len(keep)} solution(s)', solutions=list(qs), method=method)


def _analytic_one(model, chain, family, candidates, T_target, q_seed, p_tol, o_tol,
                  max_solutions, near_singular=False):
    """:func:`analytic_result` in Python floats with every joint active -- the common case,
    a few times faster; an approximate family's solutions polished (:func:`_polished`), and an
    exact one's ``near_singular`` (within :data:`NEAR_SINGULAR`) for a tolerance below
    :data:`ROUNDING` (there the subproblems' angle 5 is off by more) -- or None to take the
    general way (no exact solution inside the limits and tolerances, or the best one's error
    above a tolerance).
    """
    if _polishing(family, p_tol, o_tol) or near_singular and min(p_tol, o_tol) < ROUNDING:
        candidates = _polished(chain, family, candidates, T_target, q_seed,
                               np.ones(6, dtype=bool), p_tol, o_tol)
    return _ranked_one(model, chain, candidates, T_target, q_seed, p_tol, o_tol, max_solutions,
                       f'analytic {family.name}', clip=not family.snapped)


def _continuum_one(model, chain, candidates, T_target, q_seed, p_tol, o_tol, max_solutions,
                   method):
    """:func:`_analytic_one` for ``candidates`` moved along the wrist singularity's continuum
    to the points nearest the seed (:meth:`~ros_dynamics.engine.ik_analytic.Family.solve_one`
    given ``near``): each checked on the chain, since a joint 5 a hair off the singularity
    (within :data:`~ros_dynamics.engine.ik_analytic.SINGULAR_ANGLE`) makes a point moved along
    the line miss the target by up to that times the turn, and rounding there reaches 1.5e-8
    rad (a tangency's solutions, flagged not exact, are checked too). None when none is inside
    the limits and tolerances -- or when a candidate near a seed near its target (within
    :data:`SEED_BRANCH`, in angles a whole turn apart) is not the answer: the continuum then
    crosses a limit between them, or the point nearest the seed is out of the arm's reach
    (three parallel axes with the elbow near straight), and the search from the seed tries.
    A seed that reaches the target is the first solution itself.
    """
    rows = np.array(list(dict.fromkeys(q for q, _ in candidates)))      # a tangency's twice
    if not len(rows):
        return None
    p_err, o_err = error_norms(chain.poses(rows), np.broadcast_to(T_target, (len(rows), 4, 4)))
    ok = (p_err <= p_tol) & (o_err <= o_tol)
    checked = [(q, True, (p, o)) for q, p, o in zip(rows[ok].tolist(), p_err[ok].tolist(),
                                                    o_err[ok].tolist())]
    result = _ranked_one(model, chain, checked, T_target, q_seed, p_tol, o_tol, max_solutions,
                         method, clip=False)
    if result is None:
        return None
    x_seed = q_seed[chain.moved]
    nearest = np.abs((rows - x_seed + np.pi) % (2.0 * np.pi) - np.pi).max(axis=1).min()
    answered = np.abs(result.q[chain.moved] - x_seed).max()
    if nearest <= SEED_BRANCH and answered > nearest + _DISTINCT:
        return None
    seed = seed_result(model, chain, T_target, q_seed, p_tol, o_tol) if answered < _DISTINCT \
        else None
    if seed is not None:       # a robot asked for where it is stays, not a rounding's hair off
        result.q = result.solutions[0] = seed.q
        result.position_error, result.orientation_error = seed.position_error, \
            seed.orientation_error
    return result


def _ranked_one(model, chain, candidates, T_target, q_seed, p_tol, o_tol, max_solutions,
                method, clip):
    """:func:`ranked` in Python floats for ``candidates``, ``(q, exact)`` pairs of the
    values of ``chain.moved`` -- or ``(q, True, (position_error, orientation_error))``
    triples already checked on the chain (:func:`_polished`); None when none is exact and
    inside the limits, or the best one's error is above a tolerance. With ``clip``, those a
    tangency's rounding puts a hair past a limit (up to ``TANGENT_SLACK``) are clipped in
    beside the others (UR3's elbow folded at its limit of 3.14159265: the arccos gives pi,
    3.6e-9 past it, and the seed's own branch was lost for one 2.9 rad away when only the
    branches inside none were clipped) -- not a snapped geometry's, polished only to the
    tolerance: past a limit by a snapping, they go the general way, which polishes them to
    rounding (a clipped one of another branch won over the seed's own there). A solution
    clipped into the limits, or that comes twice
    unchecked (a tangency's), is checked on the chain -- and every one when a tolerance is
    below :data:`ROUNDING`.
    """
    x_seed = q_seed[chain.moved].tolist()
    limits = chain.float_limits
    tight = min(p_tol, o_tol) < ROUNDING
    ranked = []
    for candidate in candidates:
        if not candidate[1]:
            continue
        # A hair past a limit at a tangency: clipped (checked below), and turned in as well.
        turned = _turned_into_limits(candidate[0], x_seed, limits,
                                     hair=TANGENT_SLACK if clip else 0.0)
        if turned is not None and turned[1] and clip:
            other = _turned_into_limits(candidate[0], x_seed, limits)
            if other is not None and other[0] != turned[0]:
                ranked.append((math.dist(other[0], x_seed), other[0],
                               None if other[1] else candidate[2:]))
        if turned is not None:
            x, clipped = turned
            # A clipped one's pose moved: checked below (None), its errors are another's.
            ranked.append((math.dist(x, x_seed), x, None if clipped else candidate[2:]))
    ranked.sort(key=lambda r: r[0])
    found, distances, checked = [], [], []
    twins = set()
    for d, x, errors in ranked:
        # A same solution is as far from the seed (within _DISTINCT): compare only those, the
        # last ones kept.
        k = len(found) - 1
        while k >= 0 and d - distances[k] < _DISTINCT and math.dist(x, found[k]) >= _DISTINCT:
            k -= 1
        if k < 0 or d - distances[k] >= _DISTINCT:
            found.append(x)
            distances.append(d)
            checked.append(errors)
        elif not checked[k]:
            twins.add(k)
    # Checked on the chain: a clipped solution, and two branches as one -- a subproblem's two
    # roots met, at a tangency, where a target a hair out of that branch's reach (a ratio up
    # to 1e-9 past one) still counts as exact, the angle then as much as 4e-5 rad off.
    twins.update(k for k, e in enumerate(checked) if e is None or not e and tight)
    if twins:
        for k in twins:
            checked[k] = (_errors_one(chain.pose(np.array(found[k])), T_target),)
        kept = [k for k, e in enumerate(checked) if not e or e[0][0] <= p_tol and e[0][1] <= o_tol]
        lead = _seed_leading(chain, T_target, x_seed, p_tol, o_tol) \
            if clip and kept[:1] != [0] else None
        if lead is not None:
            kept = [k for k in kept if math.dist(found[k], x_seed) >= _DISTINCT]
        found, checked = [found[k] for k in kept], [checked[k] for k in kept]
        if lead is not None:
            found, checked = [x_seed] + found, [(lead,)] + checked
    if not found:
        return None
    found = found[:max_solutions] if max_solutions else found
    qs = np.repeat(q_seed[None], len(found), axis=0)
    qs[:, chain.moved] = found
    if checked[0]:
        p_err, o_err = checked[0][0]
    else:
        p_err, o_err = _errors_one(chain.pose(qs[0, chain.moved]), T_target)
        if p_err > p_tol or o_err > o_tol:
            return None
    return IKResult(qs[0], True, p_err, o_err, 0, 1, f'{method}: {len(found)} solution(s)',
                    solutions=list(qs), method=method)


def _seed_leading(chain, T_target, x_seed, p_tol, o_tol):
    """The errors of the seed ``x_seed`` (floats, of ``chain.moved``) against ``T_target``
    where it reaches it inside the limits, else None: the answer of :func:`_ranked_one` when
    its nearest candidate, clipped at a limit or a tangency's, misses a tolerance below its
    rounding (UR3's elbow folded at its limit of 3.14159265, 1e-9 off at 1e-9 and 1e-10: the
    robot asked for where it is was answered 0.6-5.4 rad away 136 times in 160, a review's).
    """
    if not all(lower <= x <= upper for x, (lower, upper, _) in zip(x_seed, chain.float_limits)):
        return None
    errors = _errors_one(chain.pose(np.array(x_seed)), T_target)
    return errors if errors[0] <= p_tol and errors[1] <= o_tol else None


def seed_answer(model, chain, T_target, q_seed, seed_pose, active, p_tol, o_tol):
    """The seed itself when it already reaches ``T_target`` (:func:`seed_result`), else its
    own iteration when its pose is near (:func:`warm_result`), else None -- one pose error for
    both; ``seed_pose``: the seed's joint frames and pose
    (:meth:`~ros_dynamics.engine.ik_chain.Chain.frames_one`).
    """
    errors = _errors_one(seed_pose[1], T_target)
    return seed_result(model, chain, T_target, q_seed, p_tol, o_tol, seed_pose[1], errors) or \
        warm_result(model, chain, T_target, q_seed, seed_pose, active, p_tol, o_tol,
                    errors=errors)


def seed_result(model, chain, T_target, q_seed, p_tol, o_tol, T_seed=None, errors=None):
    """The seed as the answer (``method`` 'seed') when it already reaches ``T_target`` within
    the tolerances from inside the joint limits (a robot asked for where it is): one forward
    kinematics (``T_seed`` (4, 4) when known; its ``errors`` too) instead of a solve; else None.
    """
    x = q_seed[chain.moved]
    p_err, o_err = errors or _errors_one(chain.pose(x) if T_seed is None else T_seed, T_target)
    if p_err > p_tol or o_err > o_tol or not (
            (x >= model.lower_limits[chain.moved]) & (x <= model.upper_limits[chain.moved])).all():
        return None
    return IKResult(q_seed.copy(), True, p_err, o_err, 0, 1, 'the seed already reaches the '
                    'target', solutions=[q_seed.copy()], method='seed')


#: [rad] Several solutions of held joints whose nearest is farther than this from the seed
#: (in a joint) are joined by the seed's own answer when it has one (:func:`held_result`).
NEXT_TO_SEED = 5e-3

#: A seed nearer its target than the seed table whose held answer left its branch is iterated
#: at most this many times, while each iteration cuts the cost to this factor of it or less.
LONGER_ITERATIONS, LONGER_CUT = 12, 0.7

#: A seed whose pose is within this distance [m] and angle [rad] of the target is iterated
#: alone first (:func:`warm_result`): a robot tracking a moving target.
WARM_DISTANCE, WARM_ANGLE = 0.05, 0.25


def warm_result(model, chain, T_target, q_seed, seed_pose, active, p_tol, o_tol, longer=False,
                errors=None):
    """The answer of :func:`~ros_dynamics.engine.ik_search.from_seed` (one solution, method
    'numerical') when the seed's pose is near ``T_target`` (``seed_pose``: its joint frames
    and pose, :meth:`~ros_dynamics.engine.ik_chain.Chain.frames_one`; its ``errors``
    within :data:`WARM_DISTANCE` and :data:`WARM_ANGLE`) and the iteration converges; else None.
    ``longer``: whatever the distance, for up to :data:`LONGER_ITERATIONS` while each cuts the
    cost to :data:`LONGER_CUT` times it or less (a seed nearer its target than the seed table,
    :func:`held_result`).
    """
    if not longer:
        p_err, o_err = errors or _errors_one(seed_pose[1], T_target)
        if p_err > WARM_DISTANCE or o_err > WARM_ANGLE:
            return None
    x_seed = q_seed[chain.moved]
    limits = (model.lower_limits[chain.moved], model.upper_limits[chain.moved])
    found = from_seed(chain, T_target, x_seed, seed_pose, limits, p_tol, o_tol, active,
                      *((LONGER_ITERATIONS, LONGER_CUT) if longer else ()))
    if found is None:
        return None
    x, p_err, o_err, iterations = found
    q = q_seed.copy()
    q[chain.moved] = x
    return IKResult(q, True, p_err, o_err, iterations, 1, f'converged from the seed '
                    f'({iterations} iteration(s))', solutions=[q.copy()])


def seed_in_a_turn(chain, q_seed, active):
    """A copy of ``q_seed`` (nq,) with each unbounded angle the solve may move by whole turns
    (``active``, None for all; :attr:`~ros_dynamics.engine.ik_chain.Chain.periodic`) brought
    within half a turn of zero, and the indices in ``q`` of the angles it brought; or None when
    each already is. A solve from it works
    on angles a double holds to full precision -- one of 1e9 rad it holds only to 1e-7 --
    and :func:`turned_to_seed` moves its answer back.
    """
    unbounded = chain.unbounded
    if not len(unbounded):
        return None
    if active is not None:
        unbounded = unbounded[active[unbounded]]
    index = chain.moved[unbounded]
    index = index[np.abs(q_seed[index]) > math.pi]
    if not len(index):
        return None
    wrapped = q_seed.copy()
    # The angle modulo a true turn (sine and cosine reduce any argument exactly), not modulo
    # the double nearest 2 pi, which is 2.4e-16 short and drifts 4e-8 rad by 1e9 rad.
    wrapped[index] = np.arctan2(np.sin(q_seed[index]), np.cos(q_seed[index]))
    return wrapped, index


def turned_to_seed(model, result, chain, q_seed, wrapped, index, T_target, p_tol, o_tol):
    """``result`` of a solve from ``wrapped`` (:func:`seed_in_a_turn` of ``q_seed``, which
    brought the angles ``index``) with its configurations moved back by the turns between
    the two (:func:`moved_back`), its errors those of ``q`` there. That move rounds the angles
    to the spacing of doubles at the seed's size, so each configuration is checked again on
    the chain: a solution the move takes beyond the tolerances (``o_tol`` infinite: position
    only) or the limits stays within a turn of zero, and the message says so (for ``q``, all
    of them do).
    """
    configurations = [result.q] + list(result.solutions)
    Q, inside = moved_back(model, np.array(configurations), q_seed, wrapped, index)
    p_err, o_err = error_norms(chain.poses(Q[:, chain.moved]),
                               np.broadcast_to(T_target, (len(Q), 4, 4)))
    within = (p_err <= p_tol) & (o_err <= o_tol) & inside
    why = near_zero(model, q_seed, index, Q[~within])
    if result.success and not within[0]:
        return replace(result, message=f'{result.message}; {why}')
    solutions = [turned if ok else q for q, turned, ok in
                 zip(configurations[1:], Q[1:], within[1:].tolist())]
    message = result.message
    if not within[1:].all():
        message += f'; {np.count_nonzero(~within[1:])} of the solutions {why}'
    return replace(result, q=Q[0], position_error=float(p_err[0]),
                   orientation_error=float(o_err[0]), solutions=solutions, message=message)


def moved_back(model, Q, q_seed, wrapped, index, together=False):
    """Configurations ``Q`` (k, nq) of a solve from ``wrapped`` (:func:`seed_in_a_turn` of
    ``q_seed``, which brought the angles ``index``) moved back by the turns between the two
    -- one turn less where that passes a limit (:data:`~ros_dynamics.engine.ik_chain.
    UNLIMITED` or farther; a seed within half a turn of it), ``together``: in every row where
    it does in one (a path, which must not jump a turn) -- and whether each is then inside
    the limits (k,). The move rounds the angles to the spacing of doubles at the seed's size:
    the caller checks the poses again.
    """
    Q = Q.copy()
    lower, upper = model.lower_limits[index], model.upper_limits[index]
    X = q_seed[index] + (Q[:, index] - wrapped[index])
    under, over = X < lower, X > upper
    if together:
        under, over = under.any(axis=0), over.any(axis=0)
    X += _TURN * (under.astype(float) - over)
    Q[:, index] = X
    return Q, ((X >= lower) & (X <= upper)).all(axis=1)


def near_zero(model, q_seed, index, missed):
    """Why configurations stay within a turn of zero, not of the seed ``q_seed`` whose angles
    ``index`` were brought there: ``missed`` (k, nq), those :func:`moved_back` moved back and
    found beyond the tolerances or the limits.
    """
    if ((missed[:, index] < model.lower_limits[index]) |
            (missed[:, index] > model.upper_limits[index])).any():
        return 'within a turn of zero, not of the seed: its turn there is past a joint limit'
    size = float(np.abs(q_seed[index]).max())
    return (f'within a turn of zero, not of the seed: a double holds an angle of {size:.3g} '
            f'rad only to {math.ulp(size):.2g} rad')


def _errors_one(T, T_target):
    """Position error [m] and rotation angle [rad] of ``T`` against ``T_target`` (4, 4)."""
    dx, dy, dz = (T_target[:3, 3] - T[:3, 3]).tolist()
    (a, b, c), (d, e, f), (g, h, i) = T_target[:3, :3].dot(T[:3, :3].T).tolist()
    sin = 0.5 * math.sqrt((h - f) ** 2 + (c - g) ** 2 + (d - b) ** 2)
    return math.sqrt(dx * dx + dy * dy + dz * dz), math.atan2(sin, 0.5 * (a + e + i - 1.0))


def _past(limits, slack):
    """``(lower, upper, turning)`` triples widened by ``slack`` on both sides, None for the
    angles of a turn or more of range (every angle fits:
    :meth:`~ros_dynamics.engine.ik_analytic.Family.solve_one` skips them).
    """
    return [None if turning and upper - lower >= _TURN else
            (lower - slack, upper + slack, turning) for lower, upper, turning in limits]


def _turned_into_limits(q, x_seed, limits, slack=LIMIT_SLACK, hair=0.0):
    """``q`` (floats) with each angle moved by the whole turns nearest its seed (``x_seed``)
    inside its ``limits`` ((lower, upper, turning) triples; as
    :func:`~ros_dynamics.engine.ik_analytic.in_limits`, up to ``slack`` past a limit clipped
    in), a slide inside as it is -- and whether an angle was clipped (the pose then moved) --
    or None. Up to ``hair`` past a limit at the turn nearest the seed, an angle is clipped
    there rather than turned a whole turn away (UR5's wrist at its limit of -2 pi came out
    2.8e-9 past it, and its branch answered 2 pi from the seed; a review's) -- the caller
    checks the clipped pose, and tries the turn too (a solution 5e-8 past 2 pi is exact a
    turn in).
    """
    out, clipped = [], False
    for x, seed, (lower, upper, turning) in zip(q, x_seed, limits):
        if lower <= x <= upper and (not turning or -_HALF_TURN < x - seed <= _HALF_TURN):
            out.append(x)                                            # the common case
            continue
        if hair:
            near = x + _TURN * round((seed - x) / _TURN) if turning else x
            if lower - hair <= near <= upper + hair and not lower <= near <= upper:
                out.append(min(max(near, lower), upper))
                clipped = True
                continue
        v = turn_into_limits(x, seed, lower, upper, slack) if turning else None
        if v is None:
            return None
        if not lower <= v <= upper:
            v, clipped = min(max(v, lower), upper), True
        out.append(v)
    return out, clipped


_TURN = 2.0 * math.pi
_HALF_TURN = math.pi                        # a module name: cheaper than math's attribute
#: [m or rad] Below this tolerance every exact solution is checked on the chain: the
#: subproblems' rounding reaches 3e-11 on Centauro's leg (its parallel axes 5e-12 rad apart,
#: taken as exact), subproblem 6's roots 6e-10 on SO-100 (the errors of 2,292 solutions at
#: random targets, joints at limits and near the wrist singularity), and 1.5e-8 rad at the
#: wrist singularity (those solutions are always checked: :func:`with_closed_form`).
ROUNDING = 1e-8
#: Solutions closer than this [rad] are the same.
_DISTINCT = 1e-3
