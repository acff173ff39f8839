"""Lint as a test (the ament_python template's flake8 / pep257 checks, run with ruff)."""
import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_ruff():
    result = subprocess.run(
        [sys.executable, '-m', 'ruff', 'check', '--no-cache', '--config',
         os.path.join(REPO, '.ci', 'ruff.toml'), 'ros_dynamics', 'test', 'launch', 'benchmarks',
         'doc', 'setup.py'],
        cwd=REPO, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
