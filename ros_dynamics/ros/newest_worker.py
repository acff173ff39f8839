"""Work that must not hold up the streaming path, done on a thread of its own.

:class:`NewestWorker` runs a function for the newest item submitted: one item at a time, and an
item submitted while another is being worked on waits, replacing any item already waiting (the
replaced one is reported to ``on_replaced``). Memory is bounded (one item worked on, one
waiting) and the thread exists only while there is work.
"""
import threading


class NewestWorker:
    """Runs ``work(item)`` on a thread of its own for the newest item (see the module
    docstring). ``work`` must not raise (guard it); ``on_replaced()`` is called for a waiting
    item replaced before it started.
    """

    def __init__(self, work, name, on_replaced=lambda: None):
        self._work, self._name, self._on_replaced = work, name, on_replaced
        self._lock = threading.Lock()
        self._waiting = None          # (item,) not started yet
        self._busy = False

    def submit(self, item):
        """Work on ``item`` after the one under way, if any (replacing one waiting)."""
        with self._lock:
            replaced = self._waiting is not None
            self._waiting = (item,)
            start = not self._busy
            self._busy = True
        if replaced:
            self._on_replaced()
        if start:
            threading.Thread(target=self._run, name=self._name, daemon=True).start()

    def _run(self):
        while True:
            with self._lock:
                job, self._waiting = self._waiting, None
                if job is None:
                    self._busy = False
                    return
            self._work(job[0])
            del job
