"""Running nodes as a process: each node on its own executor thread (single-threaded unless the
node asks for more with an ``executor_threads`` attribute), shut down in order on SIGINT or
SIGTERM. The exit code tells the truth: 0 only after a signal, 1 when building the nodes failed
or an executor stopped on an error.
"""
import faulthandler
import gc
import signal
import sys
import threading
import traceback

import rclpy
from rclpy.executors import ExternalShutdownException, MultiThreadedExecutor, SingleThreadedExecutor
from rclpy.logging import get_logger
from rclpy.signals import SignalHandlerOptions

from . import gc_stats, memory, middleware


def run_nodes(build, args=None):
    """Init rclpy, spin every node ``build()`` returns until a signal; returns the exit code:
    0 after a signal, 1 when building raised (a SystemExit's message, or the error, printed on
    one line) or when an executor thread ended on an error (its traceback printed).

    Shutdown is ordered: SIGINT/SIGTERM set an event the main thread and the spin threads look
    at; the main thread joins the spin threads, then shuts the executors down, destroys the
    nodes and only then shuts rclpy down (rclpy's own handlers would shut the context down
    under a spinning executor thread).
    """
    faulthandler.enable()      # a crash in native code prints the Python stack
    memory.pin_allocator_thresholds()
    releasing_readers = middleware.use_releasing_readers()     # before the middleware starts
    rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)
    if releasing_readers:
        get_logger('ros_dynamics').info(
            f'Fast DDS readers free each sample once taken ({middleware.PROFILE}); set '
            'FASTRTPS_DEFAULT_PROFILES_FILE or RMW_FASTRTPS_USE_QOS_FROM_XML to configure '
            'Fast DDS yourself')
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    # Let the streaming callbacks take the interpreter back quickly while an IK solve runs.
    sys.setswitchinterval(0.0005)
    nodes, executors, threads = [], [], []
    failed = []
    code = 0
    profile = None
    try:
        nodes = list(build())
        # What lives for the whole run (model, messages, modules) leaves the garbage
        # collector's generations, so its full passes stay short beside 1 kHz callbacks.
        gc.collect()
        gc.freeze()
        # A full pass walks every object alive, with the interpreter held: 0.15-0.3 s while a
        # 10^5-waypoint path request and its answer are alive, at the default of one pass per
        # 10 young ones. One per 1,000 keeps those requests free of them; cycles that die young
        # still go in the young passes (streaming allocates and frees in step: it runs none).
        gc.set_threshold(700, 10, 1000)
        profile = gc_stats.from_environment()     # None unless ROS_DYNAMICS_GC_STATS is set
        for node in nodes:
            count = getattr(node, 'executor_threads', 1)
            executor = MultiThreadedExecutor(count) if count > 1 else SingleThreadedExecutor()
            executor.add_node(node)
            executors.append(executor)
            thread = threading.Thread(target=_spin, args=(executor, stop, failed), daemon=True,
                                      name=f'spin_{node.get_name()}')
            threads.append(thread)
            thread.start()
        while not stop.wait(0.5):
            pass
    except SystemExit as err:
        print(err, file=sys.stderr)
        code = 1
    except Exception as err:
        print(f'ros_dynamics: could not start: {type(err).__name__}: {str(err)[:1000]}',
              file=sys.stderr)
        code = 1
    finally:
        if profile is not None:               # before shutting down: the streaming time only
            profile.write()
        stop.set()
        for thread in threads:                # each leaves its loop within a turn (0.1 s)
            thread.join(timeout=5.0)
        for executor in executors:
            executor.shutdown(timeout_sec=1.0)
        for node in reversed(nodes):
            node.destroy_node()
        rclpy.try_shutdown()
    if failed:
        print('ros_dynamics: an executor stopped on an error; exiting with code 1',
              file=sys.stderr)
        code = 1
    return code


#: Longest an executor waits for work before its thread looks at the stop event again [s].
SPIN_TURN = 0.1


def _spin(executor, stop, failed):
    """Spin until ``stop`` is set; an error ends the process (through ``stop``), marked in
    ``failed`` so that the exit code says so. The executor is shut down only after this thread
    has left (rclpy's shutdown from another thread can pull the guard condition out from under a
    waiting executor: an AttributeError on ``gc.handle`` that ended the process with code 1).
    """
    try:
        while not stop.is_set():
            executor.spin_once(timeout_sec=SPIN_TURN)
    except ExternalShutdownException:
        pass
    except BaseException:
        failed.append(True)
        traceback.print_exc()
    finally:
        stop.set()
