"""ros_dynamics benchmark suite: every performance claim measured side by side with peers.

    make bench                     # full run (tens of minutes)
    python benchmarks/run.py --quick --output /tmp/bench   # a smoke run on tiny sizes

Writes ``results.json``, ``results.md`` and ``results.png`` (default: benchmarks/results/).
Absolute times drift on shared machines; ratios measured in one run hold, so every table puts
peers side by side and reports ratios to Pinocchio.
"""
import argparse
import gc
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import sysconfig
import tempfile
import time
import warnings

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import peers  # noqa: E402
import report  # noqa: E402

from ros_dynamics.engine import IKSolver, RobotModel  # noqa: E402

ROBOTS = {   # example-robot-data URDF, tip frame
    'panda': ('panda_description/urdf/panda.urdf', 'panda_hand'),
    'ur5': ('ur_description/urdf/ur5_robot.urdf', 'tool0'),
    'kinova': ('kinova_description/robots/kinova.urdf', 'j2s6s200_end_effector'),
    'talos (branched)': ('talos_data/robots/talos_reduced.urdf', 'gripper_left_base_link'),
}
IK_ARMS = {   # URDF (of erd()), tip frame: the arm is the chain from the root link to it
    'panda': ROBOTS['panda'],
    'ur5': ROBOTS['ur5'],
    'kinova': ROBOTS['kinova'],
    'xarm7': ('xarm_description/urdf/xarm7.urdf', 'link_eef'),
    'z1': ('z1_description/urdf/z1.urdf', 'gripperStator'),
    'talos left arm (branched, torso)': ('talos_data/robots/talos_reduced.urdf',
                                         'gripper_left_base_link'),
    'baxter left arm (branched)': ('baxter_description/urdf/baxter.urdf', 'left_gripper'),
    'tiago arm (branched, prismatic torso)': ('tiago_description/robots/tiago.urdf',
                                              'arm_tool_link'),
    'so100 to its jaw (offset wrist)': ('so_arm_description/urdf/so100.urdf', 'jaw'),
    # The iiwa: example-robot-data has none; pybullet (a peer here) ships one.
    'iiwa (pybullet_data)': ('pybullet_data/kuka_iiwa/model.urdf', 'lbr_iiwa_link_7'),
}
#: The bundled demo arm (the closed loop's first robot).
DEMO_ARM = os.path.join(os.path.dirname(HERE), 'ros_dynamics', 'robots', 'demo_arm.urdf')
IK_TIMEOUT = 0.005      # [s] per solve, for every solver
IK_TOLERANCE = 1e-5     # [m] and [rad]
PEERS = (peers.Pinocchio, peers.RoboticsToolbox, peers.PyKDL, peers.PyBullet, peers.MuJoCo,
         peers.IKPy)


def erd(relative):
    """Path of a URDF of example-robot-data, or of pybullet's data (``pybullet_data/...``)."""
    if relative.startswith('pybullet_data/'):
        import pybullet_data
        return os.path.join(pybullet_data.getDataPath(), relative.split('/', 1)[1])
    for base in {sysconfig.get_paths()['purelib'], sysconfig.get_paths()['platlib']}:
        path = os.path.join(base, 'cmeel.prefix', 'share', 'example-robot-data', 'robots',
                            relative)
        if os.path.isfile(path):
            return path
    raise FileNotFoundError(relative)


def load(path):
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        return RobotModel.from_urdf_file(path)


def random_states(model, n, rng):
    lo = np.where(np.isfinite(model.lower_limits), model.lower_limits, -np.pi)
    hi = np.where(np.isfinite(model.upper_limits), model.upper_limits, np.pi)
    return rng.uniform(lo, hi, (n, model.nq)), rng.normal(size=(n, model.nq)), \
        rng.normal(size=(n, model.nq))


def median_call_us(fn, states, budget_s=3.0):
    """Median wall time [us] of fn over the prepared states (one warm-up call first); stops
    after ``budget_s`` seconds (at least 5 calls) so that very slow peers stay measurable.
    """
    fn(*states[0])
    times = []
    clock = time.perf_counter
    stop = clock() + budget_s
    for s in states:
        t = clock()
        fn(*s)
        times.append(clock() - t)
        if len(times) >= 5 and t > stop:
            break
    return float(np.median(times) * 1e6)


def bench_engine_calls(calls, rng, robots):
    out = {}
    for robot in robots:
        rel, tip = ROBOTS[robot]
        path = erd(rel)
        model = load(path)
        q, qd, qdd = random_states(model, calls, rng)
        rows = {}
        candidates = [peers.Ours(model, tip)]
        for peer in PEERS:
            try:
                candidates.append(peer(model, tip, path))
            except Exception as err:  # noqa: BLE001 -- a peer that cannot load is reported
                rows[peer.name] = {'error': f'cannot load: {type(err).__name__}: {err}'[:160]}
        for cand in candidates:
            row = {}
            convert = getattr(cand, 'state', lambda a, b, c: (a, b, c))
            states = [convert(q[i], qd[i], qdd[i]) for i in range(calls)]
            for op in peers.OPERATIONS:
                fn = cand.ops.get(op)
                if fn is None:
                    row[op] = {'note': cand.notes.get(op, 'not offered')}
                    continue
                try:
                    row[op] = {'us': median_call_us(fn, states)}
                except Exception as err:  # noqa: BLE001
                    row[op] = {'note': f'failed: {type(err).__name__}: {err}'[:120]}
            rows[cand.name] = row
        out[robot] = {'nq': model.nq, 'tip': tip, 'peers': rows}
        print(f'[bench] engine calls on {robot} done', flush=True)
    return out


def bench_trajectory(points, rng, repeats):
    path = erd(ROBOTS['panda'][0])
    model = load(path)
    q, qd, qdd = random_states(model, points, rng)
    result = {'robot': 'panda', 'points': points, 'ms': {}}

    def best(fn):
        times = []
        for _ in range(repeats):
            t = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t)
        return float(np.median(times) * 1e3)

    result['ms']['ros_dynamics batched (one call)'] = best(
        lambda: model.inverse_dynamics(q, qd, qdd))
    ours = peers.Ours(model, 'panda_hand').ops['inverse_dynamics']
    result['ms']['ros_dynamics loop'] = best(
        lambda: [ours(q[i], qd[i], qdd[i]) for i in range(points)])
    for peer in (peers.Pinocchio, peers.RoboticsToolbox, peers.PyKDL, peers.PyBullet,
                 peers.MuJoCo):
        try:
            p = peer(model, 'panda_hand', path)
            fn = p.ops['inverse_dynamics']
            states = [p.state(q[i], qd[i], qdd[i]) for i in range(points)]
            result['ms'][f'{peer.name} loop'] = best(lambda: [fn(*s) for s in states])
            if peer is peers.Pinocchio:
                result['ms'].update(_pinocchio_batched(p, states, best))
            if peer is peers.RoboticsToolbox:
                Q, QD, QDD = (np.array(x) for x in zip(*states))
                result['ms']['roboticstoolbox batched (rne on arrays)'] = best(
                    lambda: p.robot.rne(Q, QD, QDD))
        except Exception as err:  # noqa: BLE001
            result['ms'][f'{peer.name} loop'] = f'n/a: {type(err).__name__}: {err}'[:120]
    print('[bench] trajectory done', flush=True)
    return result


def _pinocchio_batched(p, states, best):
    """Pinocchio's fastest path: rneaInParallel, its batched C++ call over a ModelPool."""
    pin = p.pin
    if not hasattr(pin, 'rneaInParallel'):
        return {'pinocchio rneaInParallel': 'n/a: not in this Pinocchio version'}
    Q, V, A = (np.asfortranarray(np.array(x).T) for x in zip(*states))
    out = {}
    for threads in (1, 2):
        pool = pin.ModelPool(p.model, threads)
        tau = np.zeros((p.model.nv, Q.shape[1]), order='F')
        out[f'pinocchio rneaInParallel ({threads} thread{"s" if threads > 1 else ""}, batched '
            'C++)'] = best(lambda: pin.rneaInParallel(threads, pool, Q, V, A, tau))
    return out


def settle_garbage_collector():
    """What is alive now (models, the peers' modules: roboticstoolbox alone brings SymPy) leaves
    the garbage collector's generations, as the node does at startup (ros/process.py): else a
    full pass over this process's heap costs 46-113 ms (measured with gc.callbacks over the IK
    section), and one landing inside a timed solve made it 107 ms (a TIAGo solve, among
    12,000 of about 0.2 ms).
    """
    gc.collect()
    gc.freeze()


def _ik_arm(robot):
    """The tip, URDF path, model, chain joints (indices of the joints from the root link to the
    tip) and the limits the targets are drawn in (infinite ones as +-pi) of an arm of
    :data:`IK_ARMS`.
    """
    rel, tip = IK_ARMS[robot]
    path = erd(rel)
    model = load(path)
    chain = [model.joint_names.index(j.name) for j in peers.urdf_chain(path, tip)[0]
             if j.type != 'fixed']
    lo = np.where(np.isfinite(model.lower_limits), model.lower_limits, -np.pi)
    hi = np.where(np.isfinite(model.upper_limits), model.upper_limits, np.pi)
    return tip, path, model, chain, lo, hi


def bench_ik(targets, slow_targets, rng, arms):
    """The TRAC-IK protocol on every arm: random reachable targets (the chain's joints drawn
    inside the limits, the rest at mid-range), seed mid-range, 5 ms, 1e-5; every answer checked
    with Pinocchio's forward kinematics. ``slow_targets`` for the slow peers (roboticstoolbox's
    ik_LM, KDL's LMA, ikpy).
    """
    out = {}
    for robot in arms:
        tip, path, model, chain, lo, hi = _ik_arm(robot)
        seed = model.middle_configuration()
        goals = []
        for _ in range(targets):
            q = seed.copy()
            q[chain] = rng.uniform(lo[chain], hi[chain])
            goals.append(model.frame_pose(q, tip))
        check = peers.PoseCheck(model, tip, path)
        t = time.perf_counter()
        solver = IKSolver(model)
        table = solver.prepare(tip)            # one-time seed table, outside the timed solves
        prepare_ms = (time.perf_counter() - t) * 1e3
        rows, runners = {}, {'ros_dynamics': _OurSolver(solver, tip, goals, [seed] * len(goals))}
        for peer in (peers.EAIK, peers.IKGeo):
            try:
                runners[peer.name] = _analytic_peer(peer(model, tip), goals, seed)
            except Exception as err:  # noqa: BLE001 -- a peer that cannot load is reported
                rows[peer.name] = {'note': f'n/a: {err}'[:160]}
        try:
            runners[peers.TracIK.name] = _trac_solver(
                peers.TracIK(model, tip, path, IK_TIMEOUT, IK_TOLERANCE), goals,
                [seed] * len(goals))
        except Exception as err:  # noqa: BLE001 -- a peer that cannot load is reported
            rows[peers.TracIK.name] = {'note': f'n/a: {type(err).__name__}: {err}'[:160]}
        settle_garbage_collector()
        for name, (answers, times, counts) in _interleaved(len(goals), runners).items():
            rows[name] = _ik_row(check, goals, answers, times, counts)
        rows['ros_dynamics']['method'] = runners['ros_dynamics'].method
        rows = {name: rows[name] for name in ('ros_dynamics', peers.EAIK.name, peers.IKGeo.name,
                                              peers.TracIK.name)}
        rows.update(_slow_ik_peers(model, tip, path, chain, seed, goals[:slow_targets], check))
        out[robot] = {'targets': targets, 'slow_targets': len(goals[:slow_targets]),
                      'joints': len(chain), 'tip': tip, 'rows': rows, 'prepare_ms': prepare_ms,
                      'seed_table': len(table)}
        print(f'[bench] IK on {robot} done', flush=True)
    return out


#: Targets per block of :func:`_interleaved`: blocks of 25 cost our warm solves about 5 %
#: (Panda, seeds 1e-3 off: 0.133 ms against 0.128 in one run of 500), the caches cold after
#: each switch.
IK_BLOCK = 100


def _interleaved(count, runners, block=IK_BLOCK):
    """Each of ``runners`` (name: a function of a target's index returning its answer (q or
    None), time [s] and number of solutions (or None)) on targets ``0 .. count - 1``, in
    blocks of ``block`` targets, the runner that goes first turning from block to block: the
    host's speed drifts within seconds (the same UR5 solves took a median of 0.10 ms, then
    0.20 ms for a few seconds, then 0.10 again, in one process), and a solver timed in one run
    of a thousand targets after the other's meets other conditions; a block keeps each warm
    (solve by solve, each evicts the other's caches: UR3 0.16 ms against 0.10, Panda's warm
    seeds 0.19 against 0.13). Returns per
    name its answers, times and solution counts (None where a runner gives none), in target
    order.
    """
    names = list(runners)
    out = {name: ([], [], []) for name in names}
    for b, start in enumerate(range(0, count, block)):
        for name in names[b % len(names):] + names[:b % len(names)]:
            for i in range(start, min(start + block, count)):
                for column, value in zip(out[name], runners[name](i)):
                    column.append(value)
    return {name: (answers, times, None if counts[0] is None else counts)
            for name, (answers, times, counts) in out.items()}


class _OurSolver:
    """Our timed solve of ``goals[i]`` (4, 4) from ``seeds[i]`` (nq,) as a runner of
    :func:`_interleaved`; :attr:`method` is the last solve's.
    """

    def __init__(self, solver, tip, goals, seeds):
        self.solver, self.tip, self.goals, self.seeds, self.method = \
            solver, tip, goals, seeds, None

    def __call__(self, i):
        t = time.perf_counter()
        res = self.solver.solve(self.tip, self.goals[i], self.seeds[i], timeout=IK_TIMEOUT,
                                rng=i, position_tolerance=IK_TOLERANCE,
                                orientation_tolerance=IK_TOLERANCE)
        seconds = time.perf_counter() - t
        self.method = res.method
        return (res.q if res.success else None), seconds, len(res.solutions)


def _trac_solver(trac, goals, seeds):
    """TRAC-IK's timed solve of ``goals[i]`` from ``seeds[i]``, a runner of
    :func:`_interleaved`.
    """
    from ros_dynamics.engine.rotations import quat_xyzw_from_matrix

    def run(i):
        T = goals[i]
        position, quat = T[:3, 3].tolist(), quat_xyzw_from_matrix(T[:3, :3]).tolist()
        t = time.perf_counter()
        q = trac.solve(seeds[i], position, quat)
        return q, time.perf_counter() - t, None
    return run


def _analytic_peer(peer, goals, seed):
    """EAIK's or IK-Geo's solve of ``goals[i]``, timed on its own call (its answers shifted
    into the limits untimed), a runner of :func:`_interleaved`.
    """
    def run(i):
        qs, seconds = peer.solve(seed, goals[i])
        return (qs[0] if qs else None), seconds, len(qs)
    return run


def _slow_ik_peers(model, tip, path, chain, seed, goals, check):
    """The slower IK peers on ``goals``: roboticstoolbox's ik_LM, KDL's LMA and ikpy."""
    rows = {}
    try:
        p = peers.RoboticsToolbox(model, tip, path)
        ets = p.robot.ets(end=tip)          # the chain from the root to the tip
        if ets.n != len(chain):
            raise RuntimeError(f'chain of {ets.n} joints, expected {len(chain)}')
        answers, times = [], []
        for T in goals:
            t = time.perf_counter()
            sol = ets.ik_LM(T, q0=seed[chain], ilimit=30, slimit=100, tol=1e-12,
                            joint_limits=True)
            times.append(time.perf_counter() - t)
            q = seed.copy()
            q[chain] = sol.q
            answers.append(q if sol.success else None)
        rows['roboticstoolbox ik_LM (C++)'] = _ik_row(check, goals, answers, times)
    except Exception as err:  # noqa: BLE001
        rows['roboticstoolbox ik_LM (C++)'] = {'note': f'n/a: {err}'[:160]}
    try:
        p = peers.PyKDL(model, tip, path)
        kdl = p.kdl
        answers, times = [], []
        seed_kdl = p.array(seed)
        solution = kdl.JntArray(len(p.index))
        for T in goals:
            frame = kdl.Frame(kdl.Rotation(*T[:3, :3].ravel().tolist()),
                              kdl.Vector(*T[:3, 3].tolist()))
            t = time.perf_counter()
            code = p.lma.CartToJnt(seed_kdl, frame, solution)
            times.append(time.perf_counter() - t)
            q = seed.copy()
            for k, i in enumerate(p.index):
                if i is not None:
                    q[i] = solution[k]
            answers.append(q if code >= 0 else None)
        rows['KDL LMA (C++)'] = _ik_row(check, goals, answers, times)
    except Exception as err:  # noqa: BLE001
        rows['KDL LMA (C++)'] = {'note': f'n/a: {err}'[:160]}
    rows['ikpy'] = {'note': 'solves its own chain (first child at every branch); timed only'}
    try:
        p = peers.IKPy(model, tip, path)
        times = []
        for T in goals:
            t = time.perf_counter()
            p.chain.inverse_kinematics_frame(T, initial_position=p.state(seed, 0, 0)[0],
                                             orientation_mode='all')
            times.append(time.perf_counter() - t)
        rows['ikpy']['median_ms'] = float(np.median(times) * 1e3)
    except Exception as err:  # noqa: BLE001
        rows['ikpy']['note'] += f'; failed: {err}'[:120]
    return rows


def _ik_row(check, goals, answers, times, counts=None):
    """Success rates (each error component within the tolerance, TRAC-IK's test; and both error
    norms within it, ours), the answers inside the limits, solve times, and the mean number of
    solutions returned per target (``counts``, for solvers that return every one).
    """
    componentwise = norms = 0
    for q, T in zip(answers, goals):
        if q is None or not np.all(np.isfinite(q)):
            continue
        inside, dp, dtheta = check.errors(q, T)
        componentwise += inside and max(np.abs(dp).max(), np.abs(dtheta).max()) <= IK_TOLERANCE
        norms += inside and max(np.linalg.norm(dp), np.linalg.norm(dtheta)) <= IK_TOLERANCE
    times = np.array(times) * 1e3
    row = {'success': componentwise / len(times), 'success_norms': norms / len(times),
           'median_ms': float(np.median(times)), 'p99_ms': float(np.percentile(times, 99)),
           'max_ms': float(times.max()), 'solves': len(times)}
    if counts is not None:
        row['solutions'] = float(np.mean(counts))
    return row


#: Arms of the path section: (URDF, tip) of IK_ARMS.
PATH_ARMS = ('ur5', 'kinova', 'z1', 'panda', 'baxter left arm (branched)')


def bench_ik_path(paths, poses, rng):
    """Cartesian paths: ``poses`` poses along a straight line (1 mm apart, the tip's
    orientation kept) from a random configuration at least a fifth of each joint's range
    inside its limits, solved by ``IKSolver.solve_path`` in one
    call and by TRAC-IK in a loop, each pose seeded with the previous answer. Every answer is
    checked with Pinocchio; a path counts as followed when every pose is solved and no joint
    moves more than 0.5 rad between poses (no branch jump).
    """
    out = {}
    for robot in PATH_ARMS:
        rel, tip = IK_ARMS[robot]
        path = erd(rel)
        model = load(path)
        check = peers.PoseCheck(model, tip, path)
        solver = IKSolver(model)
        try:
            trac = peers.TracIK(model, tip, path, IK_TIMEOUT, IK_TOLERANCE)
        except Exception as err:  # noqa: BLE001 -- a peer that cannot load is reported
            trac = None
            note = {'note': f'n/a: {type(err).__name__}: {err}'[:160]}
        lo = np.where(np.isfinite(model.lower_limits), model.lower_limits, -np.pi)
        hi = np.where(np.isfinite(model.upper_limits), model.upper_limits, np.pi)
        lines = []
        while len(lines) < paths:
            q0 = rng.uniform(lo + 0.2 * (hi - lo), hi - 0.2 * (hi - lo))   # away from limits
            d = rng.normal(size=3)
            T = np.repeat(model.frame_pose(q0, tip)[None], poses, axis=0)
            T[:, :3, 3] += np.arange(poses)[:, None] * 0.001 * d / np.linalg.norm(d)
            lines.append((q0, T))
        settle_garbage_collector()
        ours = _path_runs(lines, check, lambda q0, T: solver.solve_path(
            tip, T, q0, position_tolerance=IK_TOLERANCE, orientation_tolerance=IK_TOLERANCE,
            timeout=1.0).q)
        theirs = _path_runs(lines, check, lambda q0, T: _trac_loop(trac, q0, T)) if trac \
            else note
        out[robot] = {'paths': paths, 'poses': poses, 'method': solver.solve_path(
            tip, lines[0][1], lines[0][0]).method, 'ros_dynamics': ours,
            peers.TracIK.name: theirs}
        print(f'[bench] IK paths on {robot} done', flush=True)
    return out


def _trac_loop(trac, q0, T):
    from ros_dynamics.engine.rotations import quat_xyzw_from_matrix
    q, out = q0, []
    for T_n in T:
        q = trac.solve(q, T_n[:3, 3].tolist(), quat_xyzw_from_matrix(T_n[:3, :3]).tolist())
        if q is None:
            return None
        out.append(q)
    return np.array(out)


def _path_runs(lines, check, solve):
    times, followed = [], 0
    for q0, T in lines:
        t = time.perf_counter()
        Q = solve(q0, T)
        times.append(time.perf_counter() - t)
        if Q is None or np.abs(np.diff(Q, axis=0)).max() > 0.5:
            continue
        followed += all(inside and max(np.abs(dp).max(), np.abs(dt).max()) <= IK_TOLERANCE
                        for inside, dp, dt in (check.errors(q, T_n) for q, T_n in zip(Q, T)))
    times = np.array(times) * 1e3
    return {'followed': followed / len(lines), 'median_ms': float(np.median(times)),
            'p99_ms': float(np.percentile(times, 99))}


#: Warm seeds: each joint of the target's configuration moved by up to this [rad] (a robot
#: tracking a target at 1 kHz moves about 1e-3 rad per step; 1e-2 is a slower loop).
WARM_OFFSETS = (1e-3, 1e-2)
#: Targets at a singularity: (arm of IK_ARMS, joint, value) -- a UR arm's wrist straight
#: (joint 5 at 0: axes 4 and 6 in line), the Kinova's likewise (at pi), Panda's joint 2 at 0
#: (axes 1 and 3 in line) -- with seeds 1e-2 rad off.
SINGULAR_TARGETS = (('ur5', 'wrist_2_joint', 0.0), ('kinova', 'j2s6s200_joint_5', np.pi),
                    ('panda', 'panda_joint2', 0.0))
#: [rad] An answer with no joint farther than this from a seed 1e-3 (1e-2) rad off stays
#: next to it.
WARM_STAYS = {1e-3: 0.05, 1e-2: 0.1}


def bench_ik_warm(targets, rng, arms):
    """Warm seeds: random reachable targets (as :func:`bench_ik`), each seeded with its own
    configuration moved by up to :data:`WARM_OFFSETS` in every joint (inside the limits), and
    targets at a singularity (:data:`SINGULAR_TARGETS`); ours and TRAC-IK, 5 ms, 1e-5, every
    answer checked with Pinocchio, and whether it stays next to the seed (:data:`WARM_STAYS`).
    """
    cases = [(robot, None, d) for robot in arms for d in WARM_OFFSETS]
    cases += [(robot, (joint, value), 1e-2) for robot, joint, value in SINGULAR_TARGETS
              if robot in arms]
    out = {}
    for robot, singular, d in cases:
        tip, path, model, chain, lo, hi = _ik_arm(robot)
        goals, seeds = [], []
        for _ in range(targets):
            q = model.middle_configuration()
            q[chain] = rng.uniform(lo[chain], hi[chain])
            if singular:
                q[model.q_names.index(singular[0])] = singular[1]
            goals.append(model.frame_pose(q, tip))
            seed = q.copy()
            seed[chain] = np.clip(q[chain] + rng.uniform(-d, d, len(chain)), lo[chain],
                                  hi[chain])
            seeds.append(seed)
        check = peers.PoseCheck(model, tip, path)
        solver = IKSolver(model)
        solver.prepare(tip)
        runners, rows = {'ros_dynamics': _OurSolver(solver, tip, goals, seeds)}, {}
        try:
            runners[peers.TracIK.name] = _trac_solver(
                peers.TracIK(model, tip, path, IK_TIMEOUT, IK_TOLERANCE), goals, seeds)
        except Exception as err:  # noqa: BLE001 -- a peer that cannot load is reported
            rows[peers.TracIK.name] = {'note': f'n/a: {type(err).__name__}: {err}'[:160]}
        settle_garbage_collector()
        for name, (answers, times, _) in _interleaved(len(goals), runners).items():
            rows[name] = _warm_row(check, goals, seeds, answers, times, d)
        rows = {name: rows[name] for name in ('ros_dynamics', peers.TracIK.name)}
        name = f'{robot}, {singular[0]} at {singular[1]:.3g}' if singular else robot
        out[f'{name} (seed {d:g} off)'] = {'arm': robot, 'offset': d, 'rows': rows,
                                            'targets': targets}
    print('[bench] IK warm seeds done', flush=True)
    return out


def _warm_row(check, goals, seeds, answers, times, offset):
    """:func:`_ik_row`, and the share of targets answered within :data:`WARM_STAYS` of the
    seed in every joint.
    """
    row = _ik_row(check, goals, answers, times)
    row['stays'] = float(np.mean([q is not None and np.abs(q - s).max() <= WARM_STAYS[offset]
                                  for q, s in zip(answers, seeds)]))
    return row


def bench_deadline(solves, rng):
    """Solves that cannot succeed (targets 5 m out of reach, random orientations) run to their
    deadline: how late they return [ms past the timeout].
    """
    from ros_dynamics.engine.rotations import exp_so3
    out = {}
    for robot in ('panda', 'talos left arm (branched, torso)'):
        rel, tip = IK_ARMS[robot]
        model = load(erd(rel))
        solver = IKSolver(model)
        solver.prepare(tip)
        seed = model.middle_configuration()
        late = []
        settle_garbage_collector()
        for i in range(solves // 2):
            T = np.eye(4)
            T[:3, :3] = exp_so3(rng.normal(size=3))
            direction = rng.normal(size=3)
            T[:3, 3] = 5.0 * direction / np.linalg.norm(direction)
            t = time.perf_counter()
            solver.solve(tip, T, seed, timeout=IK_TIMEOUT, rng=i)
            late.append(time.perf_counter() - t - IK_TIMEOUT)
        late = np.array(late) * 1e3
        out[robot] = {'solves': len(late), 'timeout_ms': IK_TIMEOUT * 1e3,
                      'p50_late_ms': float(np.median(late)),
                      'p99_late_ms': float(np.percentile(late, 99)),
                      'max_late_ms': float(late.max())}
    print('[bench] IK deadline done', flush=True)
    return out


#: Robots of the node section: example-robot-data URDF and the tip frames served (every output
#: on for each: pose, twist and Jacobian per tip, gravity torques and command, markers).
NODE_ROBOTS = {
    'panda': ('panda_description/urdf/panda.urdf', ['panda_hand_tcp']),
    'talos': ('talos_data/robots/talos_full_v2.urdf',
              ['gripper_left_base_link', 'gripper_right_base_link', 'left_sole_link',
               'right_sole_link']),
}
OURS, ECHO = 'ros_dynamics dynamics_node', 'echo node (rclpy floor)'


def bench_node(runs, profile_seconds):
    """Each ``(robot, rate [Hz], duration [s])`` of ``runs``: ours, then the echo node, fed the
    robot's joint states at that rate, back to back (both measured in the same run);
    then, per robot, a run of ours sampled by py-spy for ``profile_seconds`` at the highest rate,
    with the node timing its garbage collections.
    """
    import node_profile
    import psutil
    import rclpy
    from sensor_msgs.msg import JointState
    scripts = sysconfig.get_paths()['scripts']
    rclpy.init()
    client = rclpy.create_node('bench_client')
    results = {}
    try:
        for robot, rate, duration in runs:
            rel, tips = NODE_ROBOTS[robot]
            path = erd(rel)
            model = load(path)
            entry = results.setdefault(robot, {'nq': model.nq, 'tips': tips, 'runs': {}})
            for name, cmd in _node_commands(scripts, path, tips).items():
                entry['runs'].setdefault(name, {})[str(rate)] = _node_run(
                    rclpy, client, JointState, psutil, cmd, model, rate, duration)
                print(f'[bench] node {name} on {robot} at {rate} Hz done', flush=True)
        for robot, entry in results.items():
            rate = max(rate for r, rate, _ in runs if r == robot)
            if not node_profile.available():
                entry['profile'] = {'note': 'py-spy not installed (make bench installs it)'}
                continue
            path = erd(NODE_ROBOTS[robot][0])
            cmd = _node_commands(scripts, path, entry['tips'])[OURS]
            entry['profile'] = _node_run(rclpy, client, JointState, psutil, cmd, load(path),
                                         rate, profile_seconds, profile=node_profile)
            entry['profile']['rate'] = rate
            print(f'[bench] node profile on {robot} done', flush=True)
    finally:
        client.destroy_node()
        rclpy.try_shutdown()
    return results


def _node_commands(scripts, path, tips):
    return {OURS: [os.path.join(scripts, 'dynamics_node'), '--ros-args',
                   '-p', f'urdf_file:={path}', '-p', f'tip_frames:=[{",".join(tips)}]'],
            ECHO: [sys.executable, os.path.join(HERE, 'echo_node.py')]}


def _node_run(rclpy, client, JointState, psutil, cmd, model, rate, duration, profile=None):
    """One node process fed joint states of ``model`` at ``rate`` for ``duration``: answers,
    latency to its gravity_torques, CPU of the process [% of one core], memory, the load
    average; with ``profile`` (:mod:`node_profile`), py-spy's breakdown and the GC statistics.
    """
    from diagnostic_msgs.msg import DiagnosticArray
    env = dict(os.environ)
    scratch = tempfile.mkdtemp(prefix='ros_dynamics_node_bench_')
    gc_path, stacks = os.path.join(scratch, 'gc_stats.json'), os.path.join(scratch, 'stacks.txt')
    if profile is not None:
        from ros_dynamics.ros.gc_stats import ENVIRONMENT
        env[ENVIRONMENT] = gc_path
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    sent, lat = {}, []

    def on_msg(msg):
        key = (msg.header.stamp.sec, msg.header.stamp.nanosec)
        t = sent.pop(key, None)
        if t is not None:
            lat.append(time.perf_counter() - t)

    sub = client.create_subscription(JointState, 'gravity_torques', on_msg, 1000)
    passes = []          # the node's own median time of an output pass, per diagnostics report

    def on_diagnostics(msg):
        for status in msg.status:
            values = {kv.key: kv.value for kv in status.values}
            if 'compute_time_median_ms' in values:
                passes.append(float(values['compute_time_median_ms']))

    diagnostics = client.create_subscription(DiagnosticArray, '/diagnostics', on_diagnostics,
                                             10)
    pub = client.create_publisher(JointState, 'joint_states', 1000)
    msg = JointState(name=list(model.joint_names), position=[0.1] * model.nq,
                     velocity=[0.0] * model.nq)
    settle(rclpy, client, pub, msg, sent, lambda: lat, rate, 2.0)
    period = 1.0 / rate
    lat.clear()
    sent.clear()
    passes.clear()
    info = psutil.Process(proc.pid)
    mem_start = info.memory_info().rss
    cpu_start = sum(info.cpu_times()[:2])
    load_start = os.getloadavg()
    sampler = profile.record(proc.pid, duration, stacks) if profile is not None else None
    count, start = 0, time.perf_counter()
    rng = np.random.default_rng(0)
    while time.perf_counter() - start < duration:
        _spin_until(rclpy, client, start + count * period)
        msg.header.stamp = client.get_clock().now().to_msg()
        msg.position = rng.uniform(-1, 1, model.nq).tolist()
        sent[(msg.header.stamp.sec, msg.header.stamp.nanosec)] = time.perf_counter()
        pub.publish(msg)
        count += 1
    end = time.perf_counter() + 1.0
    while time.perf_counter() < end:
        rclpy.spin_once(client, timeout_sec=0.01)
    elapsed = time.perf_counter() - start
    cpu_seconds = sum(info.cpu_times()[:2]) - cpu_start
    mem_end = info.memory_info().rss
    load_end = os.getloadavg()
    if sampler is not None:
        sampler.wait(duration + 30)
    proc.send_signal(signal.SIGINT)
    proc.wait(10)
    client.destroy_subscription(sub)
    client.destroy_subscription(diagnostics)
    client.destroy_publisher(pub)
    lat_ms = np.array(lat) * 1e3
    out = {'duration_s': duration, 'sent': count, 'answered': len(lat),
           'output_rate_hz': len(lat) / duration,
           'p50_ms': float(np.median(lat_ms)) if len(lat) else None,
           'p99_ms': float(np.percentile(lat_ms, 99)) if len(lat) else None,
           'cpu_percent': 100.0 * cpu_seconds / elapsed, 'rss_start_mb': mem_start / 2 ** 20,
           'rss_end_mb': mem_end / 2 ** 20,
           'load_average': [round(x, 2) for x in load_start[:1] + load_end[:1]]}
    if passes:       # ours: the median over the run of its per-second medians
        out['output_pass_ms'] = float(np.median(passes))
    if profile is not None:
        out['parts_percent_of_core'] = profile.breakdown(stacks, out['cpu_percent'])
        if os.path.isfile(gc_path):
            with open(gc_path) as f:
                out['gc'] = profile.gc_share(json.load(f), cpu_seconds)
    shutil.rmtree(scratch, ignore_errors=True)
    return out


def settle(rclpy, client, pub, msg, sent, answered, rate, seconds, timeout=30.0):
    """Bring a node under test to its steady state: publish ``msg`` (its stamp recorded in
    ``sent``) until ``answered()`` is true, then for ``seconds`` at ``rate`` without recording,
    so that what follows measures the node running, not its start-up. The same for every node.
    """
    deadline = time.monotonic() + timeout
    while not answered() and time.monotonic() < deadline:
        msg.header.stamp = client.get_clock().now().to_msg()
        sent[(msg.header.stamp.sec, msg.header.stamp.nanosec)] = time.perf_counter()
        pub.publish(msg)
        rclpy.spin_once(client, timeout_sec=0.05)
    until = time.perf_counter() + seconds
    while time.perf_counter() < until:
        msg.header.stamp = client.get_clock().now().to_msg()
        pub.publish(msg)
        _spin_until(rclpy, client, time.perf_counter() + 1.0 / rate)


def _spin_until(rclpy, client, target):
    """Take the client's messages until ``target`` (perf_counter) [s], waiting for them rather
    than polling: a client spinning a core would take it from the nodes measured (two cores).
    """
    while (remaining := target - time.perf_counter()) > 0:
        rclpy.spin_once(client, timeout_sec=remaining)


def bench_scaling(sizes, calls, rng):
    out = {}
    for n in sizes:
        rows = [(0.0, np.pi / 2 if i % 2 else 0.0, 0.1, 0.0, 'revolute', (-3, 3),
                 (1.0, (0.05, 0, 0), (0.001, 0.002, 0.002))) for i in range(n)]
        model = RobotModel.from_dh(rows)
        q, qd, qdd = random_states(model, calls, rng)
        states = list(zip(q, qd, qdd))
        out[n] = {'inverse_dynamics_us': median_call_us(model.inverse_dynamics, states),
                  'mass_matrix_us': median_call_us(lambda a, b, c: model.mass_matrix(a), states),
                  'gravity_us': median_call_us(lambda a, b, c: model.gravity_torques(a), states)}
    print('[bench] scaling done', flush=True)
    return out


def machine():
    import numpy
    return {'python': platform.python_version(), 'numpy': numpy.__version__,
            'platform': platform.platform(), 'processor': platform.processor() or
            platform.machine(), 'cpus': os.cpu_count(),
            'date': time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--quick', action='store_true', help='tiny sizes (a smoke run)')
    parser.add_argument('--output', default=os.path.join(HERE, 'results'))
    parser.add_argument('--only', nargs='*', default=None,
                        help='sections: engine trajectory ik warm path deadline node scaling '
                        'loop')
    parser.add_argument('--robots', nargs='*', default=list(ROBOTS),
                        help=f'robots of the engine section: {list(ROBOTS)}')
    parser.add_argument('--arms', nargs='*', default=list(IK_ARMS),
                        help=f'arms of the IK section: {list(IK_ARMS)}')
    args = parser.parse_args(argv)
    quick = args.quick
    rng = np.random.default_rng(20261121)
    sections = args.only or ['engine', 'trajectory', 'ik', 'warm', 'path', 'deadline', 'node',
                             'scaling', 'loop']
    results = {'machine': machine(), 'quick': quick}
    previous = os.path.join(args.output, 'results.json')
    if args.only and os.path.isfile(previous):       # a partial run updates its sections
        with open(previous) as f:
            results = dict(json.load(f), machine=results['machine'], quick=quick)
    if 'engine' in sections:
        results['engine_calls'] = bench_engine_calls(30 if quick else 2000, rng, args.robots)
    if 'trajectory' in sections:
        results['trajectory'] = bench_trajectory(50 if quick else 1000, rng, 3 if quick else 15)
    if 'ik' in sections:
        results['ik'] = bench_ik(10 if quick else 1500, 3 if quick else 100, rng, args.arms)
    if 'warm' in sections:
        results['ik_warm'] = bench_ik_warm(10 if quick else 500, rng, args.arms)
    if 'path' in sections:
        results['ik_path'] = bench_ik_path(2 if quick else 30, 100, rng)
    if 'deadline' in sections:
        results['deadline'] = bench_deadline(20 if quick else 2000, rng)
    if 'node' in sections:
        results['node'] = bench_node(
            [('panda', 250, 1.0), ('talos', 250, 1.0)] if quick else
            [('panda', 250, 10.0), ('panda', 500, 10.0), ('panda', 1000, 60.0),
             ('talos', 1000, 60.0)], 2.0 if quick else 20.0)
    if 'loop' in sections:
        import loop
        results['loop'] = loop.bench_loop(
            {name: (DEMO_ARM if name == 'demo arm' else erd(ROBOTS[name][0]),
                    'tool0' if name == 'demo arm' else ROBOTS[name][1])
             for name in ('demo arm', 'ur5', 'panda', 'talos (branched)')})
    if 'scaling' in sections:
        results['scaling'] = bench_scaling([2, 8] if quick else [2, 4, 8, 16, 32, 64],
                                           20 if quick else 300, rng)
    os.makedirs(args.output, exist_ok=True)
    with open(os.path.join(args.output, 'results.json'), 'w') as f:
        json.dump(results, f, indent=1)
    with open(os.path.join(args.output, 'results.md'), 'w') as f:
        f.write(report.markdown(results))
    report.chart(results, os.path.join(args.output, 'results.png'))
    print(f'[bench] wrote {args.output}/results.md, results.json, results.png')
    return 0


if __name__ == '__main__':
    sys.exit(main())
