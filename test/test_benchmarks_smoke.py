"""The benchmark harness runs (tiny sizes) and writes its three reports; peers that are not
installed (make bench installs them) are shown as such, not omitted.
"""
import json
import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_benchmark_harness_smoke_run(tmp_path):
    result = subprocess.run(
        [sys.executable, os.path.join(REPO, 'benchmarks', 'run.py'), '--quick', '--only',
         'engine', 'trajectory', 'scaling', '--robots', 'ur5', '--output', str(tmp_path)],
        capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    for name in ('results.json', 'results.md', 'results.png'):
        assert (tmp_path / name).is_file(), name
    data = json.loads((tmp_path / 'results.json').read_text())
    rows = data['engine_calls']['ur5']['peers']
    assert 'us' in rows['ros_dynamics']['inverse_dynamics']
    assert 'us' in rows['pinocchio']['inverse_dynamics']
    for peer in ('roboticstoolbox', 'pybullet', 'mujoco', 'ikpy'):
        assert peer in rows                    # measured, or an error saying why not
    assert data['trajectory']['ms']['ros_dynamics batched (one call)'] > 0
    assert 'Targets' in (tmp_path / 'results.md').read_text()


def test_benchmark_ik_section_smoke_run(tmp_path):
    """The IK sections on UR5 (tiny sizes): ours and EAIK (a test dependency) measured -- an
    error in the harness's own code after a peer loaded fails the run, not an 'n/a' row -- and
    warm seeds, also at the wrist singularity.
    """
    result = subprocess.run(
        [sys.executable, os.path.join(REPO, 'benchmarks', 'run.py'), '--quick', '--only', 'ik',
         'warm', '--arms', 'ur5', '--output', str(tmp_path)],
        capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    data = json.loads((tmp_path / 'results.json').read_text())
    rows = data['ik']['ur5']['rows']
    assert rows['ros_dynamics']['success'] == 1.0, rows['ros_dynamics']
    for name in ('ros_dynamics', 'EAIK (C++)'):
        assert rows[name]['median_ms'] > 0 and rows[name]['solutions'] > 1, rows[name]
    warm = data['ik_warm']
    assert set(warm) == {'ur5 (seed 0.001 off)', 'ur5 (seed 0.01 off)',
                         'ur5, wrist_2_joint at 0 (seed 0.01 off)'}
    for case in warm.values():
        ours = case['rows']['ros_dynamics']
        assert ours['success'] == 1.0 and ours['stays'] == 1.0, ours
    assert 'IK warm ur5 (seed 0.001 off)' in (tmp_path / 'results.md').read_text()
