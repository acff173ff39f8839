"""Entry point of ``ros2 run ros_dynamics dynamics_node``.

The process first restarts itself on the system allocator (:mod:`.memory`), before rclpy,
NumPy and the engine are imported, then runs the dynamics node and its services node.
"""
from . import memory


def main(args=None):
    """Run the nodes; returns the process exit code (see :func:`.process.run_nodes`)."""
    memory.restart_on_system_allocator()
    from .dynamics_node import main as run_dynamics_node
    return run_dynamics_node(args)
