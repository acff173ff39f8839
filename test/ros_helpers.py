"""Helpers for tests that talk to nodes over real rclpy: start a node process, wait for messages."""
import contextlib
import os
import shutil
import signal
import subprocess
import sys
import sysconfig
import time

import rclpy

PACKAGE = 'ros_dynamics'
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def package_prefix():
    """Install prefix of the ros_dynamics ament package (e.g. a colcon install), or None."""
    try:
        from ament_index_python.packages import PackageNotFoundError, get_package_prefix
    except ImportError:
        # What get_package_prefix does: the first AMENT_PREFIX_PATH entry that registers it.
        for prefix in filter(None, os.environ.get('AMENT_PREFIX_PATH', '').split(os.pathsep)):
            marker = os.path.join(prefix, 'share', 'ament_index', 'resource_index', 'packages',
                                  PACKAGE)
            if os.path.isfile(marker):
                return prefix
        return None
    try:
        return get_package_prefix(PACKAGE)
    except PackageNotFoundError:
        return None


def executable(name):
    """Path of an installed node or tool of this package.

    ``make env`` installs them next to the interpreter of the checkout's ``.venv`` (editable:
    the checkout's code; ``.venv-apt`` likewise); a colcon install puts them in
    ``<prefix>/lib/ros_dynamics`` of the package's ament prefix (``colcon test``, a sourced
    workspace). Under a venv of the checkout its entry points come first, so a sourced
    workspace cannot stand in for the code under test; elsewhere the ament prefix comes first.
    ``PATH`` last.
    """
    scripts = [sysconfig.get_paths()['scripts'], os.path.dirname(sys.executable)]
    prefix = package_prefix()
    installed = [os.path.join(prefix, 'lib', PACKAGE)] if prefix is not None else []
    own_venv = os.path.dirname(os.path.realpath(sys.prefix)) == os.path.realpath(REPO)
    folders = scripts + installed if own_venv else installed + scripts
    for folder in folders:
        path = os.path.join(folder, name)
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    found = shutil.which(name)
    if found is None:
        raise FileNotFoundError(f'{name} is not installed: looked in {folders} and on PATH '
                                '(run make env, or colcon build and source the install)')
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


def odometry_message(p, quat_xyzw, twist, frame='odom', child='base_link'):
    """A nav_msgs/Odometry: pose ``p``, ``quat_xyzw`` of ``child`` in ``frame``, ``twist``
    ``[linear; angular]`` in ``child``'s axes.
    """
    from nav_msgs.msg import Odometry
    msg = Odometry()
    msg.header.frame_id, msg.child_frame_id = frame, child
    pose = msg.pose.pose
    pose.position.x, pose.position.y, pose.position.z = (float(c) for c in p)
    o = pose.orientation
    o.x, o.y, o.z, o.w = (float(c) for c in quat_xyzw)
    t = msg.twist.twist
    t.linear.x, t.linear.y, t.linear.z, t.angular.x, t.angular.y, t.angular.z = \
        (float(c) for c in twist)
    return msg


@contextlib.contextmanager
def client_node(name):
    """Rclpy initialised and a node named ``name`` for a test module to talk through."""
    rclpy.init()
    node = rclpy.create_node(name)
    try:
        yield node
    finally:
        node.destroy_node()
        rclpy.shutdown()


def rss_mb(pid, kind='VmRSS'):
    """Resident memory of process ``pid`` [MB] (Linux, /proc/<pid>/status): ``VmRSS`` all of
    it, ``RssAnon`` its private memory, ``RssShmem`` shared memory it has mapped (the
    middleware's shared-memory segments, its peers' included).
    """
    with open(f'/proc/{pid}/status') as f:
        for line in f:
            if line.startswith(kind + ':'):
                return int(line.split()[1]) / 1024
    raise AssertionError(f'no {kind} for process {pid}')
