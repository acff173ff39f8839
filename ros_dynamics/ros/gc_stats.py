"""Garbage-collection time of the node process, for profiling; off unless asked for.

With the environment variable :data:`ENVIRONMENT` set to a file path, :func:`from_environment`
times every collection (``gc.callbacks``) and :meth:`GcStats.write` saves, at exit, the number
of collections and the seconds spent per generation as JSON. Unset (the default), nothing is
installed: the streaming path carries no profiling code.
"""
import gc
import json
import os
import time

#: Environment variable naming the JSON file the statistics are written to.
ENVIRONMENT = 'ROS_DYNAMICS_GC_STATS'


class GcStats:
    """Collections and the time spent in them, per generation, since :meth:`start`."""

    def __init__(self, path):
        self.path = path
        self.collections = [0, 0, 0]
        self.seconds = [0.0, 0.0, 0.0]
        self.longest = 0.0                  # [s] the longest single collection
        self._began = None
        self._started = None

    def start(self):
        """Time every collection from now on."""
        self._started = time.perf_counter()
        gc.callbacks.append(self._on_gc)

    def _on_gc(self, phase, info):
        if phase == 'start':
            self._began = time.perf_counter()
        elif self._began is not None:
            took = time.perf_counter() - self._began
            generation = info['generation']
            self.collections[generation] += 1
            self.seconds[generation] += took
            self.longest = max(self.longest, took)
            self._began = None

    def write(self):
        """Stop timing and save the statistics to :attr:`path`."""
        if self._on_gc in gc.callbacks:
            gc.callbacks.remove(self._on_gc)
        with open(self.path, 'w') as f:
            json.dump({'wall_s': time.perf_counter() - self._started,
                       'collections': self.collections, 'seconds': self.seconds,
                       'longest_s': self.longest}, f)


def from_environment():
    """A started :class:`GcStats` when :data:`ENVIRONMENT` names a file, else None."""
    path = os.environ.get(ENVIRONMENT)
    if not path:
        return None
    stats = GcStats(path)
    stats.start()
    return stats
