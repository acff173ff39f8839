"""Test-session setup: isolate this run's ROS 2 traffic from any other run on the machine.

Each run claims a ROS domain ID no other running test session holds (a lock file per ID, held
for the whole session) and restricts discovery to localhost, before rclpy is imported anywhere.
Child processes (nodes started by tests) inherit both settings.
"""
import atexit
import fcntl
import os
import tempfile

_DOMAIN_LOCK = None


def _claim_domain_id():
    global _DOMAIN_LOCK
    lock_dir = tempfile.gettempdir()
    for domain in range(1, 101):
        path = os.path.join(lock_dir, f'ros_dynamics_test_domain_{domain}.lock')
        try:
            handle = open(path, 'a')
        except PermissionError:     # made by another user: a read-only handle locks as well
            try:
                handle = open(path)
            except OSError:
                continue
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.close()
            continue
        _DOMAIN_LOCK = handle
        atexit.register(handle.close)
        return domain
    raise RuntimeError('no free ROS domain ID in 1..100 for this test run')


os.environ['ROS_DOMAIN_ID'] = str(_claim_domain_id())
os.environ['ROS_AUTOMATIC_DISCOVERY_RANGE'] = 'LOCALHOST'
os.environ.setdefault('RMW_IMPLEMENTATION', 'rmw_fastrtps_cpp')
