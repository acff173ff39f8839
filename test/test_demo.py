"""The demo (make demo) closes its loops end to end on the simulated arm and writes its plot."""
import os
import re
import subprocess
import sys


def test_demo_closes_the_loops_prints_its_summary_and_writes_the_plot(tmp_path):
    result = subprocess.run([sys.executable, '-m', 'ros_dynamics.demo', '--hold', '1',
                             '--duration', '2', '--output', str(tmp_path)],
                            capture_output=True, text=True, timeout=600)
    out = result.stdout
    assert result.returncode == 0, out + result.stderr
    lines = out.splitlines()
    assert '\r' not in out and all(len(line) < 300 for line in lines)
    drift = float(re.search(r'hold drift \(gravity_command alone\) +([0-9.]+) mrad', out)[1])
    assert drift <= 1.0, out
    ratio = float(re.search(r'ratio ([0-9.]+) \(goal', out)[1])
    assert ratio <= 0.2, out                   # feedforward tracks at least five times better
    assert re.search(r'push of 20 N, estimated after 200 ms +[0-9.]+ % in force', out), out
    png = tmp_path / 'closed_loop.png'
    assert png.is_file() and os.path.getsize(png) > 20_000
    for phase in ('hold', 'track', 'baseline'):
        assert (tmp_path / f'{phase}_sim.log').is_file()
