"""The closed loop across processes: ``sim_node`` (MuJoCo), ``dynamics_node`` and, for tracking,
``effort_controller``, each a separate process talking over real topics, in one namespace.

The recorder listens to the simulation's own ``joint_states`` (stamped with simulated time):
what the robot did, measured where a robot's encoders would be.
"""
import contextlib
import os

import rclpy
from ros_helpers import NodeProcess, spin_until
from std_srvs.srv import Trigger


def wait_sim_time(node, recorder, t, wall_timeout):
    """Spin until the simulation has published a state at simulated time ``t`` [s] or later."""
    return spin_until(node, lambda: recorder.now >= t, wall_timeout)


@contextlib.contextmanager
def processes(tmp_path, *specs):
    """Start ``(label, executable, args...)`` processes; stop them all at the end (exit 0)."""
    started = []
    try:
        for label, name, *args in specs:
            started.append((label, NodeProcess(name, *args,
                                               log_path=os.path.join(tmp_path, label + '.log'))))
        yield dict(started)
    finally:
        codes = {label: p.stop() for label, p in started}
        bad = {label: c for label, c in codes.items() if c != 0}
        assert not bad, (bad, {label: p.output()[-3000:] for label, p in started})


def reset(node, namespace, timeout=30.0):
    """Call the simulation's ``~/reset``; returns the response."""
    client = node.create_client(Trigger, f'/{namespace}/sim/reset')
    assert client.wait_for_service(timeout_sec=timeout)
    future = client.call_async(Trigger.Request())
    rclpy.spin_until_future_complete(node, future, timeout_sec=timeout)
    node.destroy_client(client)
    return future.result()
