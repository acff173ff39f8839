"""What the simulation and the effort controller share as small nodes: counters and read-only
parameters declared from a table.
"""
import signal

from rcl_interfaces.msg import ParameterDescriptor
import rclpy
from rclpy.exceptions import ParameterException
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor

from ..engine.exceptions import DynamicsError


class Counts(dict):
    """Named event counters (what :func:`~ros_dynamics.ros.guard.guarded` counts into)."""

    def count(self, counter):
        """One more ``counter``."""
        self[counter] = self.get(counter, 0) + 1


def declare(node, table, read_only=()):
    """Declare every ``name: (default, description)`` of ``table`` on ``node``; the names in
    ``read_only`` cannot change at run time.
    """
    for name, (default, description) in table.items():
        node.declare_parameter(name, default, ParameterDescriptor(
            description=description, read_only=name in read_only))


def run_node(name, args, start):
    """Create node ``name``, call ``start(node, executor)`` (which spins) until SIGINT; returns
    the exit code: 1 when ``start`` refuses its parameters or files (logged as fatal).
    """
    interrupted = []

    def on_sigint(signum, frame):
        interrupted.append(signum)
        raise KeyboardInterrupt

    # Installed before rclpy's own handler, which calls it: SIGINT's KeyboardInterrupt can
    # surface inside rclpy's message conversion as a RuntimeError, still a clean stop.
    signal.signal(signal.SIGINT, on_sigint)
    rclpy.init(args=args)
    node = rclpy.create_node(name)
    code = 0
    try:
        executor = SingleThreadedExecutor()
        executor.add_node(node)
        start(node, executor)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    except RuntimeError:
        if not interrupted:
            raise
    except (OSError, ValueError, DynamicsError, ParameterException) as e:
        node.get_logger().fatal(f'cannot start: {e}')
        code = 1
    finally:
        node.destroy_node()
        rclpy.try_shutdown()
    return code
