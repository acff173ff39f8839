"""Inverse kinematics of a model: :class:`IKSolver` and :class:`IKResult`.

An :class:`IKSolver` holds what a model's IK keeps between solves -- one
:class:`~ros_dynamics.engine.ik_chain.Chain`, its analytic family
(:mod:`~ros_dynamics.engine.ik_analytic`, if it has one) and at most one seed table
(:mod:`~ros_dynamics.engine.ik_seeds`) per tip frame -- and is safe to share between threads.
A solve validates its request (typed errors naming the argument, every number bounded). Six
revolute joints of a recognised geometry are solved analytically: every solution at once,
shifted by whole turns toward the seed inside the limits, nearest the seed first (longer
chains with the others held, :mod:`~ros_dynamics.engine.ik_held`); six whose axes come in
pairs (meeting in pairs: Baxter's arm, its first joint held; two meeting and two parallel: G1's
legs) by a search over one angle, the others in closed form
(:mod:`~ros_dynamics.engine.ik_pairs`, one answer). Other chains
(and analytic targets whose every solution lies outside the limits) iterate the seed's row
alone when the seed is near the target, else the seed table's nearest starts alone
(:func:`~ros_dynamics.engine.ik_answers.table_result`), and where those do not converge fast run
the numerical search of :mod:`~ros_dynamics.engine.ik_search` until the deadline (monotonic
clock). Only a
configuration whose errors are within both tolerances is a success; otherwise the best one
found is returned with ``success=False``.
"""
import math
import threading
import time
from typing import Optional

import numpy as np

from . import ik_analytic, ik_held, ik_pairs, kinematics
from .exceptions import InvalidInputError
from .ik_answers import (
    BRANCH_JUMP,
    IKResult,
    LastDuration,
    analytic_result,
    held_result,
    near_seed,
    paired_result,
    paired_share,
    seed_answer,
    seed_in_a_turn,
    table_result,
    turned_to_seed,
    with_closed_form,
)
from .ik_chain import Chain
from .ik_path import PathResult, solve_path
from .ik_requests import active_mask, check_request, seconds
from .ik_search import Search
from .ik_seeds import SeedTable
from .spatial import inverse_transform

_EYE3 = np.eye(3)


class IKSolver:
    """Inverse kinematics of one :class:`~ros_dynamics.engine.model.Model`.

    Owns the :class:`~ros_dynamics.engine.ik_chain.Chain` of every tip frame it has solved for
    (built on first use) and the seed tables :meth:`prepare` built; both are immutable once
    built, and the dictionaries holding them change under a lock, so one solver can serve
    several threads (what solves write is a float per held-joint chain, how long its wider
    batched call took -- :class:`~ros_dynamics.engine.ik_answers.LastDuration` -- and each
    chain's last seed's frames, :meth:`~ros_dynamics.engine.ik_chain.Chain.seed_frames`, each
    replaced whole). Nothing is written to the model.
    """

    def __init__(self, model):
        self.model = model
        self._lock = threading.Lock()
        self._chains: dict[str, Chain] = {}
        self._tables: dict[str, SeedTable] = {}
        self._families: dict[str, Optional[ik_analytic.Family]] = {}
        self._held: dict[str, Optional[ik_held.HeldJoints]] = {}
        #: Per frame, the paired axes :meth:`prepare` keeps (:data:`PAIRED_SHARE`).
        self._pairs: dict[str, Optional[ik_pairs.PairedAxes | ik_pairs.MeetingAndParallel]] = {}
        #: Per frame, how long held joints' wider batched call took (several solutions).
        self._wide_calls: dict[str, LastDuration] = {}
        #: Per frame of held joints, whether one answer comes from their closed form, as
        #: :meth:`prepare` measured (absent: it does).
        self._held_for_one: dict[str, bool] = {}

    def chain(self, frame: str) -> Chain:
        """The chain of ``frame`` (built once, then kept)."""
        name = self.model.frame_names[self.model.frame_index(frame)]
        with self._lock:
            chain = self._chains.get(name)
        if chain is None:
            chain = Chain(self.model, name)
            with self._lock:
                chain = self._chains.setdefault(name, chain)
        return chain

    def family(self, frame: str, q_seed=None, active_joints=None):
        """The analytic :class:`~ros_dynamics.engine.ik_analytic.Family` of ``frame``'s chain
        with the joints outside ``active_joints`` (names; default: every joint that moves the
        frame) at their values in ``q_seed`` (nq,), or None when it has none (kept when every
        joint is active).
        """
        chain = self.chain(frame)
        active = active_mask(self.model, chain, active_joints)
        return self._family(chain, q_seed, active)

    def _family(self, chain, q_seed, active):
        if active is None:
            with self._lock:
                if chain.frame in self._families:
                    return self._families[chain.frame]
            g = ik_analytic.geometry(chain, np.zeros(len(chain.moved)),
                                     np.ones(len(chain.moved), dtype=bool))
            family = ik_analytic.classify(g) if g is not None else None
            with self._lock:
                return self._families.setdefault(chain.frame, family)
        x_seed = np.zeros(len(chain.moved)) if q_seed is None else q_seed[chain.moved]
        g = ik_analytic.geometry(chain, x_seed, active)
        return ik_analytic.classify(g) if g is not None else None

    def prepare(self, frame: str, samples: int = 20000, rng=0) -> SeedTable:
        """Build (or rebuild) the seed table of ``frame`` (:mod:`~ros_dynamics.engine.ik_seeds`):
        ``samples`` configurations inside the limits indexed by the frame's pose, from which
        later :meth:`solve` calls start next to their targets, a damped least-squares step ahead.
        A one-time cost (40-60 ms and about 11 MB for 20,000 samples of the benchmark's 6- to
        9-joint arms) that makes most solves about twice as fast and rarely-solved targets
        reliable. Six joints whose axes come in pairs (:mod:`~ros_dynamics.engine.ik_pairs`)
        are tried on 50 random targets too (10-30 ms more), and kept only where they answer
        :data:`PAIRED_SHARE` of them; a chain with a closed form once two or more of its
        joints are held (:mod:`~ros_dynamics.engine.ik_held`) solves :data:`HELD_TARGETS`
        random targets with it and without it (80-100 ms more), and one answer goes without it
        where that takes at most :data:`HELD_MARGIN` of the time. ``rng``: seed or generator of
        the samples and targets.
        """
        if not (isinstance(samples, (int, np.integer)) and 1 <= samples <= MAX_SEED_SAMPLES):
            raise InvalidInputError(f'samples: expected a whole number in 1..{MAX_SEED_SAMPLES}, '
                                    f'got {samples!r}')
        chain = self.chain(frame)
        generator = np.random.default_rng(rng)
        table = SeedTable(chain, chain.lower, chain.upper, int(samples), generator)
        # Six axes in pairs are searched over one angle only where that answers most
        # targets from this table's starts (:data:`PAIRED_SHARE`), and no family answers
        # (TALOS's legs fit :class:`~.ik_pairs.MeetingAndParallel` too).
        pairs = None if self._family(chain, None, None) is not None else \
            ik_pairs.paired_axes(chain)
        if pairs is not None and paired_share(self.model, chain, pairs, table,
                                              generator) < PAIRED_SHARE:
            pairs = None
        name = self.model.frame_names[self.model.frame_index(frame)]
        with self._lock:
            self._tables[name] = table
            self._pairs[name] = pairs
            self._held_for_one.pop(name, None)
        held = self._held_joints(chain)
        if held is not None and len(held.held) > 1:
            closed = self._held_pays(chain, generator)
            with self._lock:
                self._held_for_one[name] = closed
        return table

    def _held_pays(self, chain, rng):
        """Whether one answer of ``chain``'s held joints (:mod:`~ros_dynamics.engine.ik_held`)
        should come from their closed form: unless, over :data:`HELD_TARGETS` random targets
        (joints drawn by ``rng``, seed mid-range, 1e-5, 5 ms) solved both ways in turns, without
        it takes at most :data:`HELD_MARGIN` of the time -- the thread's CPU time: with two
        other processes busy on each of this machine's two CPUs, wall time gave TIAGo's and
        PR2's arms to the search one time in three, CPU time never (iCub's arm's choice held
        11 times in 12).
        """
        X = rng.uniform(chain.lower, chain.upper, size=(HELD_TARGETS, len(chain.moved)))
        q_seed = self.model.middle_configuration()
        spent = {True: 0.0, False: 0.0}
        for k, T in enumerate(chain.poses(X)):
            for closed in (True, False) if k % 2 else (False, True):
                start = time.thread_time()
                self._answer(chain, T, q_seed, None, None, 1e-5, 1e-5, False, None, k,
                             time.monotonic() + HELD_TIMEOUT, closed)
                spent[closed] += time.thread_time() - start
            if spent[True] + spent[False] > HELD_BUDGET:
                return True                    # targets its solves hardly answer: as before
        return spent[False] > HELD_MARGIN * spent[True]

    def seed_table(self, frame: str) -> Optional[SeedTable]:
        """The seed table :meth:`prepare` built for ``frame``, or None."""
        with self._lock:
            return self._tables.get(frame)

    def solve(self, tip_frame: str, T_target, q_seed=None, *, position_tolerance: float = 1e-05,
              orientation_tolerance: float = 1e-05, position_only: bool = False, weights=None,
              timeout: float = 0.005, max_solutions: Optional[int] = None,
              active_joints=None, rng=None) -> 'IKResult':
        """Joint positions that put ``tip_frame`` at ``T_target`` (4x4, ``T_world_tip``).

        ``q_seed`` (nq,): where the search starts and what the solutions stay close to
        (default: the middle of the limits). Only one-DOF joints move: a floating or planar
        joint above the tip (a floating base) stays where the seed puts it. Tolerances in [m]
        and [rad]; ``position_only`` ignores orientation; ``weights`` (6,) weigh the error rows
        (x, y, z, rx, ry, rz); ``timeout`` [s] of wall-clock time (at most
        :data:`MAX_TIMEOUT`); ``max_solutions``: at most this many distinct solutions are
        returned (default: every one an analytic solve finds, one of a numerical solve, which
        collects ``max_solutions`` before returning); ``active_joints``: names of the joints the
        solver may move (default: every joint that moves the tip), the others keep the seed's
        values; ``rng``: a seed or ``numpy.random.Generator`` for the restarts. Six revolute
        joints of a recognised geometry are solved analytically unless ``position_only`` or
        ``weights`` is given. See :class:`IKResult`.
        """
        model = self.model
        deadline = time.monotonic() + seconds(timeout)
        T_target, q_seed, w = check_request(model, tip_frame, T_target, q_seed, position_tolerance,
                                     orientation_tolerance, weights, max_solutions)
        if position_only:
            w = np.ones(6) if w is None else w
            w[3:] = 0.0
        chain = self.chain(tip_frame)
        if chain.root_body:        # below a floating base: the target in the base's frame
            T_world_root = kinematics.forward_kinematics(model, q_seed).T_world_body[
                chain.root_body]
            T_target = inverse_transform(T_world_root) @ T_target
        active = active_mask(model, chain, active_joints)
        turned = seed_in_a_turn(chain, q_seed, active)
        if turned is None:
            return self._answer(chain, T_target, q_seed, w, active, position_tolerance,
                                orientation_tolerance, position_only, max_solutions, rng,
                                deadline)
        wrapped, index = turned
        result = self._answer(chain, T_target, wrapped, w, active, position_tolerance,
                              orientation_tolerance, position_only, max_solutions, rng, deadline)
        return turned_to_seed(model, result, chain, q_seed, wrapped, index, T_target,
                              position_tolerance,
                              math.inf if position_only else orientation_tolerance)

    def _answer(self, chain, T_target, q_seed, w, active, position_tolerance,
                orientation_tolerance, position_only, max_solutions, rng, deadline, closed=None):
        """:meth:`solve` of a checked request, ``T_target`` in the chain's root frame;
        ``closed``: whether one answer of held joints comes from their closed form (None: as
        :meth:`prepare` found faster).
        """
        model, tip_frame = self.model, chain.frame
        handed = None                    # the subproblems' answer at a singularity they left
        result = None                    # the seed's own answer, or the seed table's
        starts = None                    # the seed table's starting points, once computed
        if w is None:
            family = self._family(chain, q_seed, active)
            answer, singular = self._closed_form(chain, family, T_target, q_seed, active,
                                                 position_tolerance, orientation_tolerance,
                                                 max_solutions, deadline, closed)
            if answer is not None and not singular:
                moved = chain.moved
                if family is None or not family.snapped or not answer.success or np.abs(
                        answer.q[moved] - q_seed[moved]).max() <= BRANCH_JUMP:
                    return answer
                # A snapped geometry near a singularity can put its solutions tenths of a
                # radian off the true ones, too far for polishing to reach the one next to
                # the seed (held joints: :func:`~.ik_answers.held_result`). So can one whose
                # solutions reach the target unchecked (:func:`~.ik_answers.unchecked`): near
                # the wrist singularity an axis turned by 3.7e-6 rad moves iCub's leg's along
                # the near-continuum (seeds 1e-3 rad off were answered up to 2 rad away), and a
                # solution a snapping past a limit of a turn or more comes back a turn away.
                return near_seed(model, chain, answer, T_target, q_seed,
                                 chain.seed_frames(q_seed[moved]), active, position_tolerance,
                                 orientation_tolerance, max_solutions)
            handed = answer if singular else None
            if (max_solutions or 1) == 1:
                # The seed reaches the target, or is near it: no search to set up.
                seed_pose = chain.seed_frames(q_seed[chain.moved])
                result = seed_answer(model, chain, T_target, q_seed, seed_pose, active,
                                     position_tolerance, orientation_tolerance)
                if result is not None and result.method == 'seed':
                    return result
                table = self.seed_table(tip_frame)
                if result is None and active is None and table is not None:
                    # The table's nearest starts alone, before a search.
                    result, starts = table_result(chain, table, T_target, q_seed, seed_pose,
                                                  position_tolerance, orientation_tolerance,
                                                  deadline)
        if result is None:
            search = Search(model, chain, self.seed_table(tip_frame), T_target, q_seed, w,
                            position_tolerance, orientation_tolerance, position_only, rng,
                            active, starts)
            result = _result(search, deadline, q_seed, int(max_solutions or 1))
        if handed is None:
            return result
        # At a singularity the closed form left to it (:func:`analytic_result`) the search
        # answers from the seed; the subproblems' solutions (the other branches, the continuum
        # by one point) join its own.
        return with_closed_form(result, handed, chain, T_target, q_seed, max_solutions,
                                (position_tolerance, orientation_tolerance))

    def _closed_form(self, chain, family, T_target, q_seed, active, p_tol, o_tol,
                     max_solutions, deadline, closed=None):
        """The analytic answer (six joints of ``family``, the chain's with the joints outside
        ``active`` held, or None; more joints with the others held -- for one answer, unless
        ``closed`` is False, or when None :meth:`prepare` found that slower; for one answer,
        six whose axes come in pairs) or None, and whether the target is at a singularity whose
        continuum's point nearest the seed it did not find (:func:`analytic_result`).
        """
        if family is not None:
            return analytic_result(self.model, chain, family, T_target, q_seed, active, p_tol,
                                   o_tol, max_solutions)
        if active is not None:
            return None, False
        held = self._held_joints(chain)
        if held is not None and closed is None:
            with self._lock:
                closed = self._held_for_one.get(chain.frame, True)
        if held is not None and (closed or (max_solutions or 1) > 1):
            with self._lock:
                wide_call = self._wide_calls.setdefault(chain.frame, LastDuration())
            return held_result(self.model, chain, held, self.seed_table(chain.frame), T_target,
                               q_seed, p_tol, o_tol, max_solutions, deadline, wide_call), False
        with self._lock:
            pairs = self._pairs.get(chain.frame)              # kept by prepare
        if pairs is None or (max_solutions or 1) > 1:        # several: the search collects them
            return None, False
        return paired_result(self.model, chain, pairs, self.seed_table(chain.frame), T_target,
                             q_seed, p_tol, o_tol, deadline), False

    def _held_joints(self, chain):
        """The chain's :class:`~ros_dynamics.engine.ik_held.HeldJoints` or None (kept)."""
        with self._lock:
            if chain.frame in self._held:
                return self._held[chain.frame]
        held = ik_held.held_joints(chain)
        with self._lock:
            return self._held.setdefault(chain.frame, held)

    def solve_path(self, tip_frame: str, T_targets, q_seed=None, **options) -> PathResult:
        """Joint positions putting ``tip_frame`` at each of ``T_targets`` (N, 4, 4) in turn, on
        one branch: :func:`~ros_dynamics.engine.ik_path.solve_path` (its keyword options:
        tolerances, ``max_joint_step``, ``active_joints``, ``timeout``).
        """
        return solve_path(self, tip_frame, T_targets, q_seed, **options)


#: Random targets :meth:`IKSolver.prepare` solves with and without the held joints' closed
#: form (:meth:`IKSolver._held_pays`; two or more held), and the share of the closed form's
#: time below which one answer goes without it. Where the held values guessed from the seed
#: table's neighbours miss often -- iCub's arm on its torso, four held and tight wrists, 7-12
#: tries per target answered at 45 us each -- the search alone took 0.59-0.76 of the time
#: (120 targets, eight seed tables; 0.82 of the median over 400); the human model's and the
#: simple humanoid's arms on their waists 0.87-1.23 (its forearm 1.10-1.70), Romeo's
#: 0.87-1.17, TALOS's 1.00-1.19, TIAGo's 1.22-1.47. With 40 targets these spread too far
#: (iCub's 0.57-0.93, Romeo's 0.75-1.28); a fixed rule of four or more held joints cost the
#: human model's forearm 50 % on the mean. One held joint is not measured: its closed form is
#: the faster by far (Panda's 1.36-1.79, xArm7's 1.23-1.54).
HELD_TARGETS, HELD_MARGIN = 120, 0.8
#: [s] The timeout of each of those solves -- wall time: long enough that a solve waiting for
#: the interpreter lock (another thread of the node solving) is not cut short, which shifted
#: iCub's ratio from 0.63-0.78 to 0.69-0.90 at 5 ms -- and the CPU time after which the
#: measurement stops and the closed form is kept (usually 0.08-0.15 s; a chain whose random
#: targets its solves hardly reach, limits of [-1e16, 3], took 1.3 s at 5 ms).
HELD_TIMEOUT, HELD_BUDGET = 0.05, 0.4

#: Share of random targets (:func:`~ros_dynamics.engine.ik_answers.paired_share`) the search
#: over one angle must answer for :meth:`IKSolver.prepare` to keep it for a chain: one that
#: fails costs 0.3-0.5 ms before the numerical search (about 0.5 ms) starts, so below about
#: 60 % the mean solve is slower (Baxter's arms answer 90-94 %; the human model's upper arms
#: 61-68 %; Baxter with the searched joint limited to 0.02 rad 4 %).
PAIRED_SHARE = 0.6

#: Most seed-table samples :meth:`IKSolver.prepare` takes (a peak of about 380 MB and 4 s,
#: 7 joints).
MAX_SEED_SAMPLES = 1_000_000


def _result(search, deadline, q_seed, max_solutions):
    """Run ``search`` until ``deadline`` and turn its outcome into an :class:`IKResult`."""
    timed_out = search.run(deadline, max_solutions)
    found = sorted(search.found, key=lambda s: np.linalg.norm(s[0] - q_seed))
    found = found[:max_solutions]
    if found:
        q, p_err, o_err = found[0]
        message = f'converged ({len(found)} solution(s), {search.attempts} attempt(s))'
        return IKResult(q, True, p_err, o_err, search.iterations, search.attempts, message,
                        timed_out, [s[0] for s in found])
    x, p_err, o_err = search.best()
    q = search.q(x)
    why = 'timed out' if timed_out else 'stopped'
    message = (f'{why} after {search.attempts} attempt(s), {search.iterations} iteration(s) '
               f'without reaching the tolerances; best position error {p_err:.3g} m, '
               f'orientation error {o_err:.3g} rad')
    return IKResult(q, False, p_err, o_err, search.iterations, search.attempts,
                    message, timed_out, [])


