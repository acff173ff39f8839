"""ros-dynamics-identify: a tool's mass, center of mass and inertia from a rosbag2 recording.

Reads the joint states (positions and efforts) of a recording -- MCAP or SQLite, through the
``rosbags`` library, no ROS installation needed -- fits the rigid payload fixed to a frame of
the URDF (:func:`ros_dynamics.engine.identify_payload_from_positions`), prints mass, center of
mass, inertia, residuals and condition number, and writes a plot of the measured efforts against
the model's torques without and with the fitted payload.

    ros-dynamics-identify BAG --urdf robot.urdf --frame tool0 [--topic /joint_states]
                          [--start S] [--end S] [--window 51] [--polyorder 3] [--friction]
                          [--max-condition 100] [--plot payload_fit.png]

Times: header stamps of the messages (the recording's receive times where a stamp is zero);
``--start`` / ``--end`` in seconds from the first joint state. Joint states must name every
joint of the model (others are ignored); messages missing a joint or efforts are skipped and
counted. Exit codes: 0 fitted; 1 the data cannot determine the payload (no efforts, too few
samples, a motion that does not excite it), with the reason; 2 an error (files, names,
arguments), one line on stderr.
"""
from __future__ import annotations

import argparse
from dataclasses import dataclass
import os
import sys

import numpy as np

from .engine import RobotModel, kinematics, rnea
from .engine.differentiation import smooth_derivatives
from .engine.exceptions import DynamicsError, InsufficientExcitationError
from .engine.identification import MAX_CONDITION, identify_payload_from_positions

JOINT_STATE = 'sensor_msgs/msg/JointState'
PROG = 'ros-dynamics-identify'


class DataError(Exception):
    """The recording holds too little usable data (exit code 1)."""


class UsageError(Exception):
    """A bad argument, file or name (exit code 2)."""


@dataclass
class JointStates:
    """Joint states read from a recording: times t (n,) [s] from the first kept state,
    positions q (n, nq), efforts tau (n, nv), and what was skipped.
    """

    t: np.ndarray
    q: np.ndarray
    tau: np.ndarray
    start_time: float
    skipped: dict


def read_joint_states(bag: str, topic: str, model: RobotModel) -> JointStates:
    """The model's joint positions and efforts from the ``sensor_msgs/msg/JointState`` messages
    on ``topic`` of the rosbag2 folder (or file) ``bag``, sorted by time, repeated stamps
    dropped.
    """
    from pathlib import Path

    from rosbags.highlevel import AnyReader
    from rosbags.typesys import Stores, get_typestore

    if not os.path.exists(bag):
        raise UsageError(f'recording {bag!r}: no such file or folder')
    try:
        reader = AnyReader([Path(bag)], default_typestore=get_typestore(Stores.ROS2_JAZZY))
        reader.open()
    except Exception as err:  # noqa: BLE001 -- rosbags raises several types for unreadable bags
        raise UsageError(f'recording {bag!r} cannot be read as a rosbag2 recording: '
                         f'{err}') from None
    try:
        connections = [c for c in reader.connections if c.topic == topic]
        if not connections:
            topics = sorted({f'{c.topic} ({c.msgtype})' for c in reader.connections})
            raise UsageError(f'topic {topic!r} is not in {bag!r}; its topics: {topics}')
        wrong = [c.msgtype for c in connections if c.msgtype != JOINT_STATE]
        if wrong:
            raise UsageError(f'topic {topic!r} carries {wrong[0]}, expected {JOINT_STATE}')
        return _collect(reader, connections, model)
    finally:
        reader.close()


def _collect(reader, connections, model):
    index = {name: i for i, name in enumerate(model.joint_names)}
    times, positions, efforts = [], [], []
    skipped = {'without efforts': 0, 'missing joints': 0}
    missing_seen = set()
    for connection, receive_ns, raw in reader.messages(connections=connections):
        msg = reader.deserialize(raw, connection.msgtype)
        names = list(msg.name)
        missing = [n for n in model.joint_names if n not in names]
        if missing:
            skipped['missing joints'] += 1
            missing_seen.update(missing)
            continue
        if len(msg.effort) != len(names) or len(msg.position) != len(names):
            skipped['without efforts'] += 1
            continue
        order = [names.index(n) for n in model.joint_names]
        stamp = msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec
        times.append(stamp if stamp > 0 else 1e-9 * receive_ns)
        positions.append(np.asarray(msg.position, dtype=float)[order])
        efforts.append(np.asarray(msg.effort, dtype=float)[order])
    if not times:
        detail = f' (missing joints: {sorted(missing_seen)})' if missing_seen else ''
        raise DataError(f'no joint state on {connections[0].topic!r} carries positions and '
                        f'efforts of all {len(index)} joints of the model{detail}')
    t = np.asarray(times)
    order = np.argsort(t, kind='stable')
    t, q, tau = t[order], np.asarray(positions)[order], np.asarray(efforts)[order]
    keep = np.r_[True, np.diff(t) > 0]
    skipped['repeated stamps'] = int(np.sum(~keep))
    if not (np.all(np.isfinite(q[keep])) and np.all(np.isfinite(tau[keep]))):
        raise DataError('positions or efforts hold NaN or infinite values')
    return JointStates(t[keep] - t[0], q[keep], tau[keep], float(t[0]), skipped)


def _window(states: JointStates, start, end) -> JointStates:
    lo = -np.inf if start is None else start
    hi = np.inf if end is None else end
    keep = (states.t >= lo) & (states.t <= hi)
    return JointStates(states.t[keep], states.q[keep], states.tau[keep], states.start_time,
                       states.skipped)


def _vector(values, digits=4):
    return '[' + ', '.join(f'{v:.{digits}f}' for v in values) + ']'


def report(estimate, states, args, model, out):
    """Print the estimate and the quality figures."""
    duration = states.t[-1] - states.t[0]
    out.write(f'payload on {estimate.frame!r} from {estimate.samples} joint states '
              f'({duration:.2f} s) of {args.topic} in {args.bag}\n')
    skipped = ', '.join(f'{n} {what}' for what, n in states.skipped.items() if n)
    if skipped:
        out.write(f'  skipped messages: {skipped}\n')
    out.write(f'  mass            {estimate.mass:.4f} kg (+- {estimate.parameter_std[0]:.2g})\n')
    out.write(f'  center of mass  {_vector(estimate.com)} m, in {estimate.frame}\n')
    out.write(f'  inertia about the center of mass [kg m^2], in {estimate.frame}:\n')
    for row in estimate.inertia:
        out.write(f'    {_vector(row, 6)}\n')
    fit = 'projected onto physical bodies' if estimate.constrained else 'least squares'
    out.write(f'  fit: {fit}; condition number {estimate.condition_number:.3g} (mass and center '
              f'of mass {estimate.mass_com_condition_number:.3g})\n')
    out.write(f'  efforts {1e3 * estimate.effort_delay:.2f} ms behind the positions (estimated, '
              'compensated)\n')
    out.write('  per joint [N m or N]: RMS residual / RMS payload torque\n')
    for name, res, share in zip(model.joint_names, estimate.residual_rms,
                                estimate.payload_torque_rms):
        out.write(f'    {name:32s} {res:10.4f} / {share:.4f}\n')


def plot(path, model, states, estimate, window, polyorder, friction):
    """PNG of measured efforts and the model's torques without and with the fitted payload."""
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt

    q, v, a = smooth_derivatives(states.t, states.q, window, polyorder)
    # The model as read from the URDF has no payload; the fitted one is added to it.
    without = _torques(model, q, v, a, model.settings, friction)
    with_payload = _torques(model, q, v, a, model.make_settings(payloads=[estimate.payload()]),
                            friction)
    n = model.nv
    fig, axes = plt.subplots(n, 1, figsize=(10, 1.9 * n + 1), dpi=100, sharex=True,
                             squeeze=False)
    for j, ax in enumerate(axes[:, 0]):
        ax.plot(states.t, states.tau[:, j], color='0.6', lw=0.8, label='measured')
        ax.plot(states.t, without[:, j], color='tab:red', lw=1.0, label='model, no payload')
        ax.plot(states.t, with_payload[:, j], color='tab:blue', lw=1.0, ls='--',
                label='model + fitted payload')
        ax.set_ylabel(f'{model.joint_names[j]}\n[N m]', fontsize=8)
        ax.grid(alpha=0.3)
    axes[0, 0].legend(loc='upper right', fontsize=8, ncol=3)
    axes[0, 0].set_title(f'payload on {estimate.frame}: {estimate.mass:.3f} kg at '
                         f'{_vector(estimate.com, 3)} m')
    axes[-1, 0].set_xlabel('time [s]')
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def _torques(model, q, v, a, settings, friction):
    state = kinematics.forward_kinematics(model, q, v, a, settings=settings)
    return rnea.inverse_dynamics(model, state, friction=friction)


class _Parser(argparse.ArgumentParser):
    """Argument errors as one line (exit 2), like every other error of the tool."""

    def error(self, message):
        raise UsageError(message)


def parse(argv) -> argparse.Namespace:
    """The command line's arguments; :class:`UsageError` for bad ones."""
    parser = _Parser(prog=PROG, description=__doc__.splitlines()[0])
    parser.add_argument('bag', help='rosbag2 recording: its folder, or its .mcap / .db3 file')
    parser.add_argument('--urdf', required=True, help='robot description (URDF file)')
    parser.add_argument('--frame', required=True, help='frame (link) the payload is fixed to')
    parser.add_argument('--topic', default='/joint_states',
                        help='sensor_msgs/msg/JointState topic (default /joint_states)')
    parser.add_argument('--start', type=float, help='[s] from the first joint state')
    parser.add_argument('--end', type=float, help='[s] from the first joint state')
    parser.add_argument('--window', type=int, default=51,
                        help='samples per local polynomial fit (odd; default 51)')
    parser.add_argument('--polyorder', type=int, default=3, help='degree of the fits (>= 2)')
    parser.add_argument('--friction', action='store_true',
                        help="model torques include the URDF's joint friction (motor efforts)")
    parser.add_argument('--max-condition', type=float, default=MAX_CONDITION,
                        help='refuse motions whose mass/center-of-mass condition number is '
                             f'larger (default {MAX_CONDITION:g})')
    parser.add_argument('--plot', default='payload_fit.png',
                        help='PNG written (default payload_fit.png; "" for none)')
    args = parser.parse_args(argv)
    if args.start is not None and args.end is not None and args.end <= args.start:
        raise UsageError(f'--end ({args.end:g} s) must come after --start ({args.start:g} s)')
    return args


def run(args, out) -> None:
    """Read, fit, report, plot; raises :class:`UsageError` or :class:`DataError`."""
    if not os.path.isfile(args.urdf):
        raise UsageError(f'--urdf {args.urdf!r}: no such file')
    model = RobotModel.from_urdf_file(args.urdf)
    model.frame_index(args.frame)
    states = _window(read_joint_states(args.bag, args.topic, model), args.start, args.end)
    if states.t.size <= args.window:
        raise DataError(f'{states.t.size} joint states with efforts in the time window, need '
                        f'more than --window {args.window}')
    estimate = identify_payload_from_positions(
        model, args.frame, states.t, states.q, states.tau, window=args.window,
        polyorder=args.polyorder, friction=args.friction, max_condition=args.max_condition)
    report(estimate, states, args, model, out)
    if args.plot:
        plot(args.plot, model, states, estimate, args.window, args.polyorder, args.friction)
        out.write(f'plot: {args.plot}\n')


def main(argv=None) -> int:
    """Entry point of ``ros-dynamics-identify``: 0 fitted, 1 unusable data (reason on stderr),
    2 error (one line on stderr).
    """
    try:
        args = parse(argv)
        run(args, sys.stdout)
    except (DataError, InsufficientExcitationError) as err:
        return _fail(f'cannot identify the payload: {err}', 1)
    except UsageError as err:
        return _fail(err, 2)
    except (DynamicsError, OSError) as err:
        return _fail(err, 2)
    except Exception as err:  # noqa: BLE001 -- a CLI reports any failure in one line, exit 2
        return _fail(f'internal error ({type(err).__name__}): {err}', 2)
    return 0


def _fail(message, code):
    text = ' '.join(str(message).split())
    sys.stderr.write(f'{PROG}: {text[:1000]}\n')
    return code


if __name__ == '__main__':
    sys.exit(main())
