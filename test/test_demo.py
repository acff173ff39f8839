"""The demo (make demo) runs end to end, answers every joint state and writes its plot."""
import os
import subprocess
import sys


def test_demo_runs_and_writes_the_plot(tmp_path):
    result = subprocess.run([sys.executable, '-m', 'ros_dynamics.demo', '--duration', '2',
                             '--output', str(tmp_path)], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert 'joint states sent' in result.stdout and ' answered; latency' in result.stdout
    lines = result.stdout.splitlines()
    assert '\r' not in result.stdout and all(len(line) < 300 for line in lines)
    assert any(line.startswith('[demo] t=') and 'sent=' in line and 'answered=' in line
               for line in lines), result.stdout
    assert 'IK round trip for tool0: success=True' in result.stdout
    assert 'match the engine to 0.0e+00' in result.stdout
    png = tmp_path / 'torques.png'
    assert png.is_file() and os.path.getsize(png) > 20_000
