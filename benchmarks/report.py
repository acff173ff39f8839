"""Markdown tables, target checks and a PNG chart of the benchmark results.

``python benchmarks/report.py [folder]`` renders them again from ``folder/results.json``.
"""
import json
import os

import numpy as np
from peers import OPERATIONS


def _fmt(cell):
    if 'us' in cell:
        return f'{cell["us"]:.1f}'
    return f'n/a ({cell.get("note") or cell.get("error")})'


def markdown(r):
    m = r['machine']
    lines = ['# ros_dynamics benchmark results', '',
             f'Machine: {m["processor"]}, {m["cpus"]} CPUs, {m["platform"]}; Python '
             f'{m["python"]}, NumPy {m["numpy"]}; run {m["date"]}'
             + (' (quick smoke run: tiny sizes, numbers are not meaningful)' if r['quick']
                else '') + '.', '',
             'Times are medians over random states (fixed seed). Absolute times drift on a '
             'shared machine; ratios measured in the same run hold.', '']
    lines += ['## Targets', '']
    lines += [f'- {t}' for t in targets(r)] or ['- (sections not run)']
    if 'engine_calls' in r:
        lines += ['', '## Engine calls: single-call latency [us]', '']
        for robot, data in r['engine_calls'].items():
            lines += [f'### {robot} (nq = {data["nq"]}, tip {data["tip"]})', '',
                      '| library | ' + ' | '.join(OPERATIONS) + ' |',
                      '|---|' + '---|' * len(OPERATIONS)]
            pin = data['peers'].get('pinocchio', {})
            for name, row in data['peers'].items():
                if 'error' in row:
                    lines.append(f'| {name} | ' + ' | '.join([row['error']] + [''] *
                                                              (len(OPERATIONS) - 1)) + ' |')
                    continue
                cells = []
                for op in OPERATIONS:
                    cell = _fmt(row[op])
                    if name != 'pinocchio' and 'us' in row[op] and 'us' in pin.get(op, {}):
                        cell += f' ({row[op]["us"] / pin[op]["us"]:.1f}x)'
                    cells.append(cell)
                lines.append(f'| {name} | ' + ' | '.join(cells) + ' |')
            lines.append('')
        lines.append('(x: ratio to Pinocchio in the same run.)')
    if 'trajectory' in r:
        t = r['trajectory']
        lines += ['', f'## Trajectory feedforward: inverse dynamics over {t["points"]} '
                  f'waypoints of {t["robot"]} [ms]', '', '| how | ms |', '|---|---|']
        lines += [f'| {k} | {v:.2f} |' if isinstance(v, float) else f'| {k} | {v} |'
                  for k, v in t['ms'].items()]
    if 'ik' in r:
        lines += _ik_tables(r)
    if 'node' in r:
        lines += _node_tables(r['node'])
    if 'loop' in r:
        lines += _loop_tables(r['loop'])
    if 'scaling' in r:
        lines += ['', '## Scaling with the number of joints (serial chains) [us]', '',
                  '| joints | inverse dynamics | mass matrix | gravity |', '|---|---|---|---|']
        for n, x in r['scaling'].items():
            lines.append(f'| {n} | {x["inverse_dynamics_us"]:.1f} | {x["mass_matrix_us"]:.1f} | '
                         f'{x["gravity_us"]:.1f} |')
    return '\n'.join(lines) + '\n'


def _ik_tables(r):
    lines = ['', '## IK: TRAC-IK protocol (random reachable targets, full pose, 1e-5, 5 ms, seed '
             'mid-range; every answer checked with Pinocchio\'s forward kinematics)', '',
             'Success: inside the limits with every component of the position error [m] and of '
             'the rotation vector [rad] within 1e-5 (TRAC-IK\'s test); "norms": both error norms '
             'within 1e-5 (ours, stricter). TRAC-IK is given the model\'s joint limits (its '
             'URDF reader reads some as zero) and targets in its chain\'s base link, the root '
             'link.', '',
             'ros_dynamics solves six revolute joints of a recognised geometry analytically '
             '(`method`) and returns every solution; a longer chain whose six joints do once the '
             'others are held, analytically at the seed\'s or a seed-table neighbour\'s values '
             'of those; EAIK and IK-Geo (analytic, every solution) are timed on their own '
             'call, their answers shifted into the limits untimed; "solutions": distinct '
             'in-limit solutions per target. The solvers take turns in blocks of 100 targets '
             '(the one first turning from block to block), so that the host\'s drifting speed '
             'meets each alike. Before each arm\'s timed solves, what the '
             'process holds is frozen out of the garbage collector (`gc.freeze()`), as the node '
             'does at startup.', '',
             '| arm | solver | solves | success | norms | median ms | p99 ms | max ms | '
             'solutions |', '|---|---|---|---|---|---|---|---|---|']
    for robot, data in r['ik'].items():
        for solver, row in data['rows'].items():
            if 'success' in row:
                name = f'{solver} ({row["method"]})' if 'method' in row else solver
                sols = f'{row["solutions"]:.2f}' if 'solutions' in row else ''
                lines.append(f'| {robot} ({data["joints"]} joints) | {name} | {row["solves"]} '
                             f'| {100 * row["success"]:.2f} % | '
                             f'{100 * row["success_norms"]:.2f} % | {row["median_ms"]:.3f} | '
                             f'{row["p99_ms"]:.3f} | {row["max_ms"]:.2f} | {sols} |')
            else:
                med = f'{row["median_ms"]:.2f}' if 'median_ms' in row else ''
                lines.append(f'| {robot} | {solver} | | {row["note"]} | | {med} | | | |')
    tables = [f'{robot} {d["seed_table"]} configurations in {d["prepare_ms"]:.0f} ms'
              for robot, d in r['ik'].items()]
    lines += ['', 'ros_dynamics builds its seed table once per arm before the timed solves '
              '(`IKSolver.prepare`; the node does it at startup): ' + '; '.join(tables) + '.']
    if 'ik_warm' in r:
        lines += ['', '### Warm seeds: each target\'s own configuration moved by up to the '
                  'offset in every joint (a robot tracking its target), and targets at a '
                  'singularity', '', 'Stays: answered with no joint farther from the seed than '
                  '0.05 rad (seeds 1e-3 off) or 0.1 rad (1e-2). Timed in turns of 100 targets, '
                  'as above.', '',
                  '| targets | solver | solves | success | stays | median ms | p99 ms |',
                  '|---|---|---|---|---|---|---|']
        lines += _solver_rows(
            ((name, solver, row) for name, d in r['ik_warm'].items()
             for solver, row in d['rows'].items()), 7,
            lambda row: [row['solves'], f'{100 * row["success"]:.2f} %',
                         f'{100 * row["stays"]:.1f} %', f'{row["median_ms"]:.3f}',
                         f'{row["p99_ms"]:.3f}'])
    if 'ik_path' in r:
        lines += ['', '### Cartesian paths: 100 poses 1 mm apart on a straight line from a '
                  'random configuration (each joint a fifth of its range inside its limits)',
                  '', 'ros_dynamics: `IKSolver.solve_path`, one call; TRAC-IK: a '
                  'loop, each pose seeded with the previous answer. Followed: every pose within '
                  '1e-5 (Pinocchio) and no joint moving more than 0.5 rad between poses.', '',
                  '| arm | solver | paths | followed | median ms | p99 ms |',
                  '|---|---|---|---|---|---|']
        lines += _solver_rows(
            ((robot, f'{solver} ({d["method"]})' if solver == 'ros_dynamics' else solver,
              dict(d[solver], paths=d['paths'])) for robot, d in r['ik_path'].items()
             for solver in ('ros_dynamics', 'TRAC-IK (C++)')), 6,
            lambda row: [row['paths'], f'{100 * row["followed"]:.0f} %',
                         f'{row["median_ms"]:.2f}', f'{row["p99_ms"]:.2f}'])
    if 'deadline' in r:
        lines += ['', '### Deadline: solves that cannot succeed (targets out of reach) run to '
                  'their 5 ms timeout', '', '| arm | solves | late p50 ms | late p99 ms | '
                  'late max ms |', '|---|---|---|---|---|']
        for robot, d in r['deadline'].items():
            lines.append(f'| {robot} | {d["solves"]} | {d["p50_late_ms"]:.3f} | '
                         f'{d["p99_late_ms"]:.3f} | {d["max_late_ms"]:.3f} |')
    return lines


def _solver_rows(entries, columns, cells):
    """Table lines ``| label | solver | cells(row)... |`` of ``(label, solver, row)`` entries
    (``columns`` in all); a row that was not measured shows its note instead.
    """
    lines = []
    for label, solver, row in entries:
        if 'note' in row:
            lines.append(f'| {label} | {solver} | | {row["note"]} |' + ' |' * (columns - 4))
        else:
            lines.append(f'| {label} | {solver} | ' + ' | '.join(map(str, cells(row))) + ' |')
    return lines


OURS, ECHO = 'ros_dynamics dynamics_node', 'echo node (rclpy floor)'
#: Node runs: the largest ratio of our p99 latency to the echo node's, per robot (else 2).
NODE_P99_LIMITS = {'panda': 2, 'talos': 3}
#: Node runs whose every state must be answered within a CPU budget [% of one core].
NODE_CPU_LIMITS = {'talos': 70}


def _node_tables(node):
    lines = ['', '## Node: joint states to gravity torques, every output on', '',
             'Each robot\'s joint states streamed to ours, then to the echo node (a minimal '
             'rclpy node republishing them: the floor rclpy sets), back to back; latency '
             'from publishing a joint state to receiving its gravity_torques. Every output on: '
             'per tip a pose, twist and Jacobian, gravity torques and command, markers (10 Hz), '
             'diagnostics. CPU: user + system time of the node process over the run, % of one '
             'core. Load: the 1-minute load average at the start and the end of the run.', '',
             '| robot (tips) | node | rate Hz | s | sent | answered | p50 ms | p99 ms | CPU % | '
             'RSS start→end MB | load |', '|---|---|---|---|---|---|---|---|---|---|---|']
    for robot, data in node.items():
        label = f'{robot} ({data["nq"]} joints; {", ".join(data["tips"])})'
        for name, runs in data['runs'].items():
            for rate, x in runs.items():
                lines.append(f'| {label} | {name} | {rate} | {x["duration_s"]:g} | {x["sent"]} '
                             f'| {x["answered"]} | {_ms(x["p50_ms"])} | {_ms(x["p99_ms"])} | '
                             f'{x["cpu_percent"]:.0f} | {x["rss_start_mb"]:.1f}→'
                             f'{x["rss_end_mb"]:.1f} | {_load(x)} |')
    lines += ['', '### Where the node\'s time goes', '',
              'A separate run of ours per robot at its highest rate, sampled by py-spy '
              '(`--nonblocking`: the node is never paused); the node\'s CPU use split into the '
              'parts of the streaming path as the samples are, in % of one core. Garbage '
              'collection is timed by the node itself (`ROS_DYNAMICS_GC_STATS`); it runs inside '
              'the code that allocates, so its time is also inside the parts above.', '']
    for robot, data in node.items():
        p = data.get('profile', {})
        if 'parts_percent_of_core' not in p:
            lines.append(f'- {robot}: {p.get("note", "not profiled")}')
            continue
        parts = '; '.join(f'{part} {share:.1f}' for part, share in
                          p['parts_percent_of_core'].items())
        gc = p.get('gc')
        gc_text = (f'; garbage collection {gc["percent_of_core"]:.2f} % of a core '
                   f'({sum(gc["collections"])} collections {gc["collections"]}, longest '
                   f'{gc["longest_ms"]:.2f} ms)') if gc else ''
        own = (f'; the node\'s own median output pass (kinematics to the last publish, wall '
               f'time) {p["output_pass_ms"]:.3f} ms') if 'output_pass_ms' in p else ''
        lines.append(f'- {robot} at {p["rate"]} Hz for {p["duration_s"]:g} s (CPU '
                     f'{p["cpu_percent"]:.0f} %, answered {p["answered"]}/{p["sent"]}, p99 '
                     f'{_ms(p["p99_ms"])} ms, load {_load(p)}): {parts}{gc_text}{own}.')
    return lines


def _loop_tables(results):
    """The closed loop on MuJoCo (benchmarks/loop.py): the demo's phases and the latency."""
    def num(x, digits=2):
        return f'{x:.{digits}f}' if isinstance(x, (int, float)) else str(x)

    lines = ['', '## Closed loop on MuJoCo (sim_node, dynamics_node, effort_controller as '
             'processes)', '',
             'Each phase in lockstep at half of real time (see benchmarks/loop.py). Hold: '
             'gravity_command alone, 10 s (goal 1 mrad). Track: RMS error of PD + '
             'feedforward_command over PD + gravity_command, 5 s near the limits (goal 0.2). '
             'Push: 20 N on the tip, wrench_estimates 200 ms in (goals 5 %, 3 deg), collision '
             'flag as seen by the client, flags during the free tracking (goal 0). Payload: '
             '1.5 kg 5 cm off the tool axis identified in the loop (goals 2 %, 5 mm), the '
             'hold\'s error before -> after it is applied (PD + feedforward; goal 1 mrad).', '',
             '| robot (joints, tip) | hold drift mrad | track RMS mrad ff / gravity | ratio | '
             'push force % | push deg | flag ms | free flags | payload mass % | payload com mm '
             '| payload hold mrad | wall s |',
             '|---|---|---|---|---|---|---|---|---|---|---|---|']
    for robot, x in results.items():
        push = x.get('push', {})
        payload = x.get('payload', {})
        if not isinstance(payload, dict):
            payload = {'mass_error_percent': payload}
        hold = payload.get('hold_mrad')
        rms = x.get('track_rms_mrad')
        lines.append(
            f'| {robot} ({x["joints"]}, {x["tip"]}) | {num(x.get("hold_drift_mrad"), 3)} | '
            + (f'{rms[0]:.2f} / {rms[1]:.2f}' if rms else '') + f' | '
            f'{num(x.get("track_ratio"), 3)} | {num(push.get("force_error_percent"))} | '
            f'{num(push.get("direction_error_deg"))} | {num(push.get("flag_after_ms"), 0)} | '
            f'{push.get("free_tracking_flags", "")} | '
            f'{num(payload.get("mass_error_percent"))} | {num(payload.get("com_error_mm"))} | '
            + (f'{hold[0]:.2f} -> {hold[1]:.3f}' if hold else '')
            + f' | {x.get("wall_s", 0):.0f} |')
    lines += ['', '### Loop latency at 1 kHz in real time: a state published to its '
              'gravity_torques received [ms]', '',
              'The simulation in real time (not in lockstep) beside ours, then beside the echo '
              'node (the rclpy floor), alone each; answered: share of the states answered; '
              'commanded: share of the states ours commanded (the rest judged stale or '
              'unanswered).', '',
              '| robot | node | states | answered | commanded | p50 | p99 | max |',
              '|---|---|---|---|---|---|---|---|']
    for robot, x in results.items():
        for who, y in x.get('latency', {}).items():
            lines.append(f'| {robot} | {who} | {y["states"]} | {100 * y["answered"]:.1f} % | '
                         + (f'{100 * y["commanded"]:.1f} %' if 'commanded' in y else '')
                         + f' | {num(y.get("p50_ms"))} | {num(y.get("p99_ms"))} | '
                         f'{num(y.get("max_ms"))} |')
    return lines


def _ms(x):
    return f'{x:.2f}' if x is not None else '-'


def _load(x):
    return '→'.join(f'{v:.2f}' for v in x.get('load_average', [])) or '-'


#: Single calls: the largest ratio to Pinocchio's, per operation.
SINGLE_CALL_LIMITS = {'frame_pose': 15, 'jacobian': 15, 'gravity': 15, 'inverse_dynamics': 25,
                      'mass_matrix': 25, 'forward_dynamics': 25}


def _met(ok):
    return 'met' if ok else 'MISSED'


def targets(r):
    out = []
    if 'trajectory' in r:
        ms = r['trajectory']['ms']
        pin = ms.get('pinocchio loop')
        ours = ms['ros_dynamics batched (one call)']
        if isinstance(pin, float):
            out.append(f'Trajectory inverse dynamics, ours batched / Pinocchio loop = '
                       f'{ours / pin:.2f} (target <= 0.7): {_met(ours <= 0.7 * pin)}')
    for robot, data in r.get('engine_calls', {}).items():
        peers = data['peers']
        for op, limit in SINGLE_CALL_LIMITS.items():
            a, b = peers['ros_dynamics'][op], peers.get('pinocchio', {}).get(op, {})
            if 'us' in a and 'us' in b:
                ratio = a['us'] / b['us']
                out.append(f'{op} on {robot}: {ratio:.1f}x Pinocchio (target <= {limit}x): '
                           f'{_met(ratio <= limit)}')
    for robot, data in r.get('ik', {}).items():
        ours, trac = data['rows']['ros_dynamics'], data['rows'].get('TRAC-IK (C++)', {})
        if 'success' not in trac:
            out.append(f'IK {robot}: TRAC-IK not measured ({trac.get("note")})')
            continue
        # Six joints of an analytic family (a seven-joint arm with a joint held is not one).
        analytic = ours.get('method', '').startswith('analytic') and data['joints'] == 6
        limit = 0.5 if analytic else 1.0
        ratio = ours['median_ms'] / trac['median_ms']
        line = (f'IK {robot}: success {100 * ours["success"]:.2f} % vs TRAC-IK '
                f'{100 * trac["success"]:.2f} %: {_met(ours["success"] >= trac["success"])}; '
                f'median {ours["median_ms"]:.3f} vs {trac["median_ms"]:.3f} ms = {ratio:.2f}x '
                f'(target <= {limit}x): {_met(ratio <= limit)}; p99 {ours["p99_ms"]:.3f} vs '
                f'{trac["p99_ms"]:.3f} ms: {_met(ours["p99_ms"] <= trac["p99_ms"])}')
        eaik = data['rows'].get('EAIK (C++)', {})
        if analytic and 'solutions' in eaik:
            line += (f'; {ours["solutions"]:.2f} solutions per target vs EAIK '
                     f'{eaik["solutions"]:.2f}: {_met(ours["solutions"] >= eaik["solutions"])}')
        out.append(line)
    for name, d in r.get('ik_warm', {}).items():
        ours, trac = d['rows']['ros_dynamics'], d['rows'].get('TRAC-IK (C++)', {})
        if 'success' not in trac:
            out.append(f'IK warm {name}: TRAC-IK not measured ({trac.get("note")})')
            continue
        ratio = ours['median_ms'] / trac['median_ms']
        out.append(f'IK warm {name}: median {ours["median_ms"]:.3f} vs {trac["median_ms"]:.3f} '
                   f'ms = {ratio:.2f}x (target <= 1x): {_met(ratio <= 1.0)}; success '
                   f'{100 * ours["success"]:.1f} % vs {100 * trac["success"]:.1f} %: '
                   f'{_met(ours["success"] >= trac["success"])}; stays next to the seed '
                   f'{100 * ours["stays"]:.1f} % vs {100 * trac["stays"]:.1f} %: '
                   f'{_met(ours["stays"] >= trac["stays"])}')
    for robot, d in r.get('ik_path', {}).items():
        ours, trac = d['ros_dynamics'], d['TRAC-IK (C++)']
        if 'note' in trac:
            out.append(f'IK path {robot}: TRAC-IK not measured ({trac["note"]})')
            continue
        speedup = trac['median_ms'] / ours['median_ms']
        out.append(f'IK path {robot}: {speedup:.1f}x faster than TRAC-IK in a loop (target >= '
                   f'5x): {_met(speedup >= 5)}; followed {100 * ours["followed"]:.0f} % vs '
                   f'{100 * trac["followed"]:.0f} %: {_met(ours["followed"] >= trac["followed"])}')
    if 'ik' in r or 'deadline' in r:
        late = [row['max_ms'] - 5.0 for d in r.get('ik', {}).values()
                for name, row in d['rows'].items() if name == 'ros_dynamics']
        late += [d['max_late_ms'] for d in r.get('deadline', {}).values()]
        solves = sum(d['rows']['ros_dynamics']['solves'] for d in r.get('ik', {}).values()) + \
            sum(d['solves'] for d in r.get('deadline', {}).values())
        out.append(f'IK deadline: over {solves} solves of 5 ms the latest returned '
                   f'{max(late):+.3f} ms past its timeout (target <= +1 ms): '
                   f'{_met(max(late) <= 1.0)}')
    for robot, data in r.get('node', {}).items():
        ours, echo = data['runs'].get(OURS, {}), data['runs'].get(ECHO, {})
        limit = NODE_P99_LIMITS.get(robot, 2)
        for rate in ours:
            a, b = ours[rate], echo.get(rate)
            if not (b and a['p99_ms'] and b['p99_ms']):
                continue
            lost = a['sent'] - a['answered']
            answered = f'{a["answered"]}/{a["sent"]}' + (f' ({lost} lost)' if lost else '')
            line = (f'Node on {robot} at {rate} Hz: p99 {a["p99_ms"]:.2f} ms vs echo '
                    f'{b["p99_ms"]:.2f} ms = {a["p99_ms"] / b["p99_ms"]:.1f}x (target <= '
                    f'{limit}x): {_met(a["p99_ms"] <= limit * b["p99_ms"])}; ')
            if robot in NODE_CPU_LIMITS:
                cpu = NODE_CPU_LIMITS[robot]
                line += (f'every state answered ({answered}): {_met(not lost)}; CPU '
                         f'{a["cpu_percent"]:.0f} % of a core (target <= {cpu} %): '
                         f'{_met(a["cpu_percent"] <= cpu)}')
            else:
                line += f'answered {answered}'
            out.append(line + f'; load {_load(a)}')
    out += [_loop_target(robot, x) for robot, x in r.get('loop', {}).items()]
    return out


def _loop_target(robot, x):
    """One line of the closed loop's goals (issue 23) on ``robot``; a phase that did not run
    is MISSED with its reason.
    """
    def goal(name, value, limit, unit, digits=2):
        if not isinstance(value, (int, float)):
            return f'{name} {value}: MISSED'
        return f'{name} {value:.{digits}f}{unit} (goal <= {limit}{unit}): {_met(value <= limit)}'

    push = x.get('push', {})
    payload = x.get('payload', {})
    if not isinstance(payload, dict):
        payload = {'mass_error_percent': payload}
    after = payload.get('hold_mrad', [None, 'n/a'])[1]
    return f'Closed loop on {robot}: ' + '; '.join([
        goal('hold drift', x.get('hold_drift_mrad'), 1, ' mrad', 3),
        goal('tracking ratio', x.get('track_ratio'), 0.2, '', 3),
        goal('push force error', push.get('force_error_percent', 'n/a'), 5, ' %'),
        goal('direction', push.get('direction_error_deg', 'n/a'), 3, ' deg'),
        goal('flagged after', push.get('flag_after_ms', 'n/a'), 10, ' ms', 0),
        goal('free-tracking flags', push.get('free_tracking_flags', 'n/a'), 0, '', 0),
        goal('payload mass', payload.get('mass_error_percent', 'n/a'), 2, ' %'),
        goal('center of mass', payload.get('com_error_mm', 'n/a'), 5, ' mm'),
        goal('hold after', after, 1, ' mrad', 3)])


def chart(r, path):
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(2, 2, figsize=(13, 9), dpi=100)
    ax = axes[0, 0]
    if 'engine_calls' in r and 'panda' in r['engine_calls']:
        peers = r['engine_calls']['panda']['peers']
        names = [n for n, row in peers.items() if 'error' not in row]
        width = 0.8 / max(len(names), 1)
        for k, name in enumerate(names):
            values = [peers[name][op].get('us', np.nan) for op in OPERATIONS]
            ax.bar(np.arange(len(OPERATIONS)) + k * width, values, width, label=name)
        ax.set_xticks(np.arange(len(OPERATIONS)) + 0.4)
        ax.set_xticklabels([op.replace('_', '\n') for op in OPERATIONS], fontsize=7)
        ax.set_yscale('log')
        ax.set_ylabel('median single call [us]')
        ax.set_title('engine calls, panda')
        ax.legend(fontsize=7)
    ax = axes[0, 1]
    if 'trajectory' in r:
        items = [(k, v) for k, v in r['trajectory']['ms'].items() if isinstance(v, float)]
        ax.barh([k for k, _ in items], [v for _, v in items])
        ax.set_xscale('log')
        ax.set_xlabel('ms (log scale)')
        ax.set_title(f'inverse dynamics over {r["trajectory"]["points"]} waypoints')
        ax.tick_params(axis='y', labelsize=7)
    ax = axes[1, 0]
    if 'scaling' in r:
        n = [int(k) for k in r['scaling']]
        for key in ('inverse_dynamics_us', 'mass_matrix_us', 'gravity_us'):
            ax.loglog(n, [r['scaling'][k][key] for k in r['scaling']], 'o-', label=key[:-3])
        ax.set_xlabel('joints')
        ax.set_ylabel('us per call')
        ax.set_title('scaling (serial chains)')
        ax.legend(fontsize=7)
    ax = axes[1, 1]
    if 'node' in r:
        for robot, data in r['node'].items():
            for name, runs in data['runs'].items():
                rates = [int(x) for x in runs]
                ax.plot(rates, [runs[x]['p99_ms'] or np.nan for x in runs], 'o-',
                        label=f'{robot}: {name} p99')
        ax.set_xlabel('joint state rate [Hz]')
        ax.set_yscale('log')
        ax.set_ylabel('p99 latency [ms] (log scale)')
        ax.set_title('joint state -> torque message')
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


if __name__ == '__main__':
    import sys
    folder = sys.argv[1] if len(sys.argv) > 1 else 'benchmarks/results'
    with open(os.path.join(folder, 'results.json')) as f:
        results = json.load(f)
    with open(os.path.join(folder, 'results.md'), 'w') as f:
        f.write(markdown(results))
    chart(results, os.path.join(folder, 'results.png'))
