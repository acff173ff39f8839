"""ros-dynamics-identify on rosbag2 recordings (MCAP and SQLite) that the tests write with
rosbags from a simulated motion with a known payload (test/simulation.py), and its exit codes.
"""
import os
from pathlib import Path
import re
import subprocess
import sys
import sysconfig

import numpy as np
import pytest
from robots import UR5, erd, load
from rosbags.rosbag2 import StoragePlugin, Writer
from rosbags.typesys import Stores, get_typestore
from simulation import payload_recording

from ros_dynamics import identify_tool

TYPES = get_typestore(Stores.ROS2_JAZZY)
JointState = TYPES.types['sensor_msgs/msg/JointState']
Header = TYPES.types['std_msgs/msg/Header']
Time = TYPES.types['builtin_interfaces/msg/Time']
String = TYPES.types['std_msgs/msg/String']
EPOCH_NS = 1_750_000_000 * 10 ** 9
#: (mass [kg], center of mass [m] in tool0, seed) of the simulated payload.
TRUTH = (3.0, (-0.04, 0.06, 0.12), 102)
TRUTH_MASS, TRUTH_COM = TRUTH[0], np.array(TRUTH[1])
STORAGE = {'mcap': StoragePlugin.MCAP, 'sqlite3': StoragePlugin.SQLITE3}


def write_bag(path, storage, t, names, q, tau, *, with_effort=True, chatter=True):
    """A recording of JointState messages stamped ``t`` [s] (plus a String topic)."""
    with Writer(Path(path), version=9, storage_plugin=STORAGE[storage]) as writer:
        states = writer.add_connection('/joint_states', JointState.__msgtype__, typestore=TYPES)
        other = writer.add_connection('/chatter', String.__msgtype__, typestore=TYPES)
        for k in range(t.size):
            ns = EPOCH_NS + int(round(t[k] * 1e9))
            msg = JointState(header=Header(stamp=Time(sec=ns // 10 ** 9, nanosec=ns % 10 ** 9),
                                           frame_id=''),
                             name=list(names), position=q[k], velocity=np.zeros(0),
                             effort=tau[k] if with_effort else np.zeros(0))
            writer.write(states, ns, TYPES.serialize_cdr(msg, JointState.__msgtype__))
            if chatter and k % 100 == 0:
                writer.write(other, ns, TYPES.serialize_cdr(String(data='hi'),
                                                            String.__msgtype__))
    return str(path)


@pytest.fixture(scope='module')
def recording():
    """10 s of the UR5 carrying a 3 kg box (the recording test_identification fits), as its
    joint states would be published: joints in another order, a gripper joint the URDF does not
    have, 3 % of the messages lost.
    """
    _, rec = payload_recording(*TRUTH)
    rng = np.random.default_rng(77)
    kept = rng.uniform(size=rec.t.size) > 0.03
    order = [3, 0, 5, 1, 4, 2]
    names = [load(erd(UR5)).joint_names[i] for i in order] + ['gripper_finger_joint']
    q = np.hstack([rec.q_measured[:, order], np.full((rec.t.size, 1), 0.01)])
    tau = np.hstack([rec.tau_measured[:, order], np.zeros((rec.t.size, 1))])
    return rec.t[kept], names, q[kept], tau[kept]


def parse_output(text):
    mass = float(re.search(r'mass +([-\d.]+) kg', text).group(1))
    com = [float(x) for x in re.search(r'center of mass +\[([^\]]+)\]', text).group(1).split(',')]
    samples = int(re.search(r'from (\d+) joint states', text).group(1))
    return mass, np.array(com), samples


@pytest.mark.parametrize('storage', ['mcap', 'sqlite3'])
def test_identifies_the_payload_of_a_recording(recording, storage, tmp_path, capsys):
    bag = write_bag(tmp_path / f'run_{storage}', storage, *recording)
    plot = tmp_path / 'fit.png' if storage == 'mcap' else None      # one plot is enough
    code = identify_tool.main([bag, '--urdf', erd(UR5), '--frame', 'tool0',
                               '--plot', str(plot or '')])
    out, err = capsys.readouterr()
    assert code == 0, err
    mass, com, samples = parse_output(out)
    assert abs(mass - TRUTH_MASS) < 0.02 * TRUTH_MASS, out
    assert np.linalg.norm(com - TRUTH_COM) < 0.005, out
    assert samples == recording[0].size - 50, out              # window // 2 dropped at each end
    assert 'condition number' in out and 'shoulder_pan_joint' in out and err == ''
    if plot is not None:
        assert out.endswith(f'plot: {plot}\n')
        with open(plot, 'rb') as f:
            assert f.read(8) == b'\x89PNG\r\n\x1a\n'
        assert os.path.getsize(plot) > 20_000


def test_time_window_and_the_bag_file_itself(recording, tmp_path, capsys):
    folder = write_bag(tmp_path / 'run', 'mcap', *recording)
    bag_file = os.path.join(folder, 'run.mcap')
    code = identify_tool.main([bag_file, '--urdf', erd(UR5), '--frame', 'tool0', '--start', '2',
                               '--end', '8', '--plot', ''])
    out, err = capsys.readouterr()
    assert code == 0, err
    mass, com, samples = parse_output(out)
    in_window = np.sum((recording[0] >= 2) & (recording[0] <= 8))
    assert samples == in_window - 50
    assert abs(mass - TRUTH_MASS) < 0.03 * TRUTH_MASS


def one_line_error(capsys):
    out, err = capsys.readouterr()
    assert err.count('\n') == 1 and err.startswith('ros-dynamics-identify: '), err
    return err


def test_errors_exit_2_with_one_line(recording, tmp_path, capsys):
    bag = write_bag(tmp_path / 'run', 'sqlite3', *recording)
    urdf = erd(UR5)
    cases = [
        ([str(tmp_path / 'missing'), '--urdf', urdf, '--frame', 'tool0'], 'no such file'),
        ([bag, '--urdf', str(tmp_path / 'nope.urdf'), '--frame', 'tool0'], 'no such file'),
        ([bag, '--urdf', urdf, '--frame', 'gripper'], "unknown frame 'gripper'; valid frames"),
        ([bag, '--urdf', urdf, '--frame', 'tool0', '--topic', '/states'],
         r"topic '/states' is not in .*/chatter \(std_msgs/msg/String\)"),
        ([bag, '--urdf', urdf, '--frame', 'tool0', '--topic', '/chatter'],
         'carries std_msgs/msg/String, expected sensor_msgs/msg/JointState'),
        ([bag, '--urdf', urdf, '--frame', 'tool0', '--window', '50'], 'expected an odd window'),
        ([bag, '--urdf', urdf, '--frame', 'tool0', '--start', '5', '--end', '1'],
         r'--end \(1 s\) must come after --start \(5 s\)'),
        ([bag, '--frame', 'tool0'], 'the following arguments are required: --urdf'),
        ([urdf, '--urdf', urdf, '--frame', 'tool0'], 'cannot be read as a rosbag2 recording'),
    ]
    for argv, message in cases:
        assert identify_tool.main(argv) == 2, argv
        assert re.search(message, one_line_error(capsys)), (argv, message)


def test_unusable_data_exit_1_with_the_reason(recording, tmp_path, capsys):
    t, names, q, tau = recording
    urdf = erd(UR5)
    no_effort = write_bag(tmp_path / 'no_effort', 'mcap', t, names, q, tau, with_effort=False)
    assert identify_tool.main([no_effort, '--urdf', urdf, '--frame', 'tool0']) == 1
    assert 'no joint state on \'/joint_states\' carries positions and efforts' in \
        one_line_error(capsys)
    wrist_only = write_bag(tmp_path / 'wrist_only', 'mcap', t, names[1:], q[:, 1:], tau[:, 1:])
    assert identify_tool.main([wrist_only, '--urdf', urdf, '--frame', 'tool0']) == 1
    assert "missing joints: ['wrist_1_joint']" in one_line_error(capsys)
    still = write_bag(tmp_path / 'still', 'mcap', t, names, np.repeat(q[:1], t.size, axis=0), tau)
    assert identify_tool.main([still, '--urdf', urdf, '--frame', 'tool0']) == 1
    assert 'does not excite the payload' in one_line_error(capsys)
    assert identify_tool.main([still, '--urdf', urdf, '--frame', 'tool0', '--end', '0.02']) == 1
    assert 'joint states with efforts in the time window' in one_line_error(capsys)


def test_console_script_is_installed_and_runs(recording, tmp_path):
    bag = write_bag(tmp_path / 'run', 'mcap', *recording)
    script = os.path.join(sysconfig.get_paths()['scripts'], 'ros-dynamics-identify')
    command = [script] if os.access(script, os.X_OK) else \
        [sys.executable, '-m', 'ros_dynamics.identify_tool']
    result = subprocess.run(command + [bag, '--urdf', erd(UR5), '--frame', 'tool0', '--plot', ''],
                            capture_output=True, text=True, cwd=str(tmp_path), timeout=120)
    assert result.returncode == 0, result.stderr
    assert 'payload on \'tool0\'' in result.stdout
    missing = subprocess.run(command + ['missing_bag', '--urdf', erd(UR5), '--frame', 'tool0'],
                             capture_output=True, text=True, cwd=str(tmp_path), timeout=120)
    assert missing.returncode == 2 and missing.stderr.count('\n') == 1
