"""Where the dynamics node's time goes: py-spy samples of the node process sorted into parts.

:func:`record` runs ``py-spy record`` (sampling, ``--nonblocking``: the node is never paused)
against a running node for some seconds; :func:`breakdown` sorts the sampled stacks into the
parts of the streaming path (:data:`PARTS`), each as a share of one core. Garbage collection
runs inside whatever Python code allocates, so it is timed by the node itself
(:mod:`ros_dynamics.ros.gc_stats`, switched on by its environment variable) and reported beside.
"""
import os
import shutil
import subprocess

#: The parts of the streaming path, in the order a stack is tested against them: the first
#: whose markers (substrings of a frame) occur in the stack names the sample. Every thread's
#: stack starts in ros_dynamics/ros/process.py, so the input part names the callbacks' modules.
PARTS = (
    ('engine (kinematics pass, gravity, Jacobians)', ('ros_dynamics/engine/',)),
    ('publishing (rclpy publish)', ('rclpy/publisher.py',)),
    ('message building (ROS-layer arithmetic, filling messages)',
     ('ros_dynamics/ros/output_publisher.py',)),
    ('input (take, validate, merge, readiness)',
     ('ros_dynamics/ros/dynamics_node.py', 'ros_dynamics/ros/joint_state_merger.py')),
    ('executor (wait set, dispatch)', ('rclpy/',)),
)
OTHER = 'other (interpreter, threads, timers)'
#: Samples per second py-spy takes.
RATE = 250


def available():
    """The py-spy executable, or None when it is not installed."""
    return shutil.which('py-spy')


def record(pid, seconds, path):
    """Start sampling process ``pid`` for ``seconds`` into ``path`` (py-spy's raw format);
    returns the py-spy process (wait for it before reading ``path``).
    """
    return subprocess.Popen(
        [available(), 'record', '--pid', str(pid), '--duration', str(int(round(seconds))),
         '--rate', str(RATE), '--nonblocking', '--format', 'raw', '--output', path],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def breakdown(path, cpu_percent):
    """Per part of :data:`PARTS` (and :data:`OTHER`), the share of one core [%] the node spent
    there: its CPU use ``cpu_percent`` [% of one core] split as the stacks sampled in ``path``
    are (idle threads are not sampled; a thread waiting for a core is, so the shares of the
    samples, not their count, say where the CPU time went).
    """
    counts = dict.fromkeys([name for name, _ in PARTS] + [OTHER], 0)
    if os.path.isfile(path):
        with open(path) as f:
            for line in f:
                stack, _, count = line.rstrip('\n').rpartition(' ')
                if not stack or not count.isdigit():
                    continue
                part = next((name for name, markers in PARTS
                             if any(m in stack for m in markers)), OTHER)
                counts[part] += int(count)
    total = sum(counts.values()) or 1
    return {name: cpu_percent * n / total for name, n in counts.items()}


def gc_share(stats, cpu_seconds):
    """Collections, GC seconds, their share of the node's CPU time [%] and the longest pause
    [ms] from the node's own GC statistics (:mod:`ros_dynamics.ros.gc_stats`).
    """
    seconds = sum(stats['seconds'])
    return {'collections': stats['collections'], 'seconds': seconds,
            'percent_of_core': 100.0 * seconds / stats['wall_s'],
            'percent_of_node_cpu': 100.0 * seconds / cpu_seconds if cpu_seconds else None,
            'longest_ms': 1e3 * stats['longest_s']}
