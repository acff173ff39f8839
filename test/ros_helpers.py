"""Helpers for tests that talk to nodes over real rclpy: start a node process, wait for messages."""
import os
import shutil
import signal
import subprocess
import sys
import sysconfig
import time

import rclpy


def executable(name):
    """Path of an installed console script (venv bin, or lib/ros_dynamics of a colcon install)."""
    for folder in (sysconfig.get_paths()['scripts'], os.path.dirname(sys.executable)):
        path = os.path.join(folder, name)
        if os.access(path, os.X_OK):
            return path
    found = shutil.which(name)
    if found is None:
        raise FileNotFoundError(f'{name} is not installed (run make env)')
    return found


class NodeProcess:
    """A node started through its entry point as a separate process; stopped with SIGINT."""

    def __init__(self, name, *ros_args, log_path=None):
        cmd = [executable(name), '--ros-args', *ros_args]
        self.log_path = log_path
        self._log = open(log_path, 'w') if log_path else subprocess.DEVNULL
        self.proc = subprocess.Popen(cmd, stdout=self._log, stderr=subprocess.STDOUT)

    def stop(self, timeout=10.0):
        """SIGINT, wait; returns the exit code (raises if it does not exit in time)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                raise
        if self._log is not subprocess.DEVNULL:
            self._log.close()
        return self.proc.returncode

    def output(self):
        if not self.log_path:
            return ''
        with open(self.log_path) as f:
            return f.read()


def spin_until(node, predicate, timeout, step=None):
    """Spin ``node`` until ``predicate()`` is true; calls ``step()`` every loop (to publish)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if step is not None:
            step()
        rclpy.spin_once(node, timeout_sec=0.02)
        if predicate():
            return True
    return False
