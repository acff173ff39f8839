"""Log lines of the node: throttled per cause, never longer than about 1 kB.

rclpy throttles per call site, so a second, different problem reported from the same line is
lost for the throttle period. :class:`ThrottledLog` throttles per *cause*: by default the text
with its numbers and quoted names blanked out (``rejected a trajectory: point 3 ...`` and
``... point 7 ...`` are one cause; ``... no points`` is another). Causes are remembered in a
bounded table; every line is clipped to :data:`MAX_LINE` characters.
"""
from collections import OrderedDict
import re
import threading
import time

#: Longest log line [characters].
MAX_LINE = 1000
#: Causes remembered at once (the least recently logged is forgotten first).
MAX_CAUSES = 256
_VARIABLE = re.compile(r"'[^']*'|\"[^\"]*\"|\[[^\]]*\]|[-+]?\d[\d.eE+-]*")


def clip(text, limit=MAX_LINE):
    """``text`` cut to ``limit`` characters, saying how much was left out."""
    text = str(text)
    if len(text) <= limit:
        return text
    return f'{text[:limit - 40]}... ({len(text) - limit + 40} more characters)'


def cause_of(text):
    """The cause a line stands for: its words without numbers and quoted parts."""
    return _VARIABLE.sub('#', str(text)[:300])


class ThrottledLog:
    """A node logger's warnings and errors, at most one per cause and ``period`` [s]."""

    def __init__(self, logger, period=5.0):
        self._logger = logger
        self.period = period
        self._last = OrderedDict()           # cause -> monotonic time of its last line
        self._lock = threading.Lock()

    def _due(self, cause):
        now = time.monotonic()
        with self._lock:
            last = self._last.get(cause)
            if last is not None and now - last < self.period:
                return False
            self._last[cause] = now
            self._last.move_to_end(cause)
            while len(self._last) > MAX_CAUSES:
                self._last.popitem(last=False)
        return True

    def warning(self, text, cause=None):
        """Log ``text`` as a warning unless its cause was logged less than a period ago."""
        if self._due(cause if cause is not None else cause_of(text)):
            self._logger.warning(clip(text))

    def error(self, text, cause=None):
        """Log ``text`` as an error unless its cause was logged less than a period ago."""
        if self._due(cause if cause is not None else cause_of(text)):
            self._logger.error(clip(text))

    def info(self, text):
        """Log ``text`` (clipped), unthrottled: for rare events."""
        self._logger.info(clip(text))

    def once(self, text, cause):
        """Log ``text`` as a warning the first time ``cause`` is given (until forgotten)."""
        with self._lock:
            if cause in self._last:
                return
            self._last[cause] = float('inf')
        self._logger.warning(clip(text))
