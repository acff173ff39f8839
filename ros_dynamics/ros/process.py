"""Running nodes as a process: each node on its own single-threaded executor thread, shut down
in order on SIGINT or SIGTERM.
"""
import faulthandler
import gc
import signal
import sys
import threading
import traceback

import rclpy
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
from rclpy.signals import SignalHandlerOptions


def run_nodes(build, args=None):
    """Init rclpy, spin every node ``build()`` returns until a signal; returns the exit code
    (1 when building raised SystemExit, whose message is printed).

    Shutdown is ordered: SIGINT/SIGTERM set an event the main thread waits on; it then stops
    the executors, joins their threads, destroys the nodes and only then shuts rclpy down
    (rclpy's own handlers would shut the context down under a spinning executor thread).
    """
    faulthandler.enable()      # a crash in native code prints the Python stack
    rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    # Let the streaming callbacks take the interpreter back quickly while an IK solve runs.
    sys.setswitchinterval(0.0005)
    nodes, executors, threads = [], [], []
    code = 0
    try:
        nodes = list(build())
        # What lives for the whole run (model, messages, modules) leaves the garbage
        # collector's generations, so its full passes stay short beside 1 kHz callbacks.
        gc.collect()
        gc.freeze()
        for node in nodes:
            executor = SingleThreadedExecutor()
            executor.add_node(node)
            executors.append(executor)
            thread = threading.Thread(target=_spin, args=(executor, stop), daemon=True,
                                      name=f'spin_{node.get_name()}')
            threads.append(thread)
            thread.start()
        while not stop.wait(0.5):
            pass
    except SystemExit as err:
        print(err, file=sys.stderr)
        code = 1
    finally:
        for executor in executors:
            executor.shutdown(timeout_sec=1.0)
        for thread in threads:
            thread.join(timeout=5.0)
        for node in reversed(nodes):
            node.destroy_node()
        rclpy.try_shutdown()
    return code


def _spin(executor, stop):
    """Spin until shut down; an error ends the process (through ``stop``)."""
    try:
        executor.spin()
    except ExternalShutdownException:
        pass
    except Exception:
        traceback.print_exc()
    finally:
        stop.set()
