"""Giving memory back to the operating system after a huge input (glibc only).

A joint state with a million names, a trajectory with a million points or a compute_fk request
with a million frames is turned into millions of small Python objects that are freed right
after. Four things would keep much of that memory resident for the rest of the run:

- Python's own small-object allocator returns a 1 MB arena only when every object in it is
  gone, and a few survivors pin most arenas: after a million-point trajectory the process stays
  ~40 MB larger. :func:`restart_on_system_allocator` restarts the process, before anything is
  imported, with ``PYTHONMALLOC=malloc``, so freed objects are glibc's, whose free pages can be
  handed back. Measured no slower: message building and the engine within 2 %; the node at
  1 kHz took 44-50 % of a core on panda (42-44 % with pymalloc), 67-68 % on talos either way.
- After freeing a large block glibc raises its mmap threshold to that size (up to 32 MB) and its
  trim threshold to twice that, so later big blocks come from arenas whose free tops are kept.
  :func:`pin_allocator_thresholds` fixes both at glibc's initial 128 kB, which turns the raising
  off: every large block gets pages of its own, unmapped when freed.
- Each thread that allocates gets an arena of its own (up to 8 per core), and glibc gives the
  free top of a thread's arena back only when a single large block is freed there, never for
  many small ones, nor on ``malloc_trim``: a million-frame compute_fk request read on an
  executor thread left the node 28 MB larger (124 -> 152 MB), about one run in three, by which
  thread read it. :func:`pin_allocator_thresholds` also keeps every thread on one arena
  (``M_ARENA_MAX`` 1), whose top and free pages are all given back; the Python threads take
  turns under the interpreter lock anyway.
- Freed blocks stay with glibc: :func:`release_free_memory`, called once a second, asks glibc
  to return free pages (``malloc_trim``): a few microseconds when there is nothing to return,
  about 10 ms once after a million freed objects.

Elsewhere (not glibc) all of this does nothing. A user who sets ``PYTHONMALLOC``,
``GLIBC_TUNABLES`` with malloc tunables, ``MALLOC_ARENA_*`` or ``MALLOC_*_`` chooses for themselves.
"""
import ctypes
import ctypes.util
import os
import sys

#: Blocks of at least this many bytes are mapped on their own; free tops beyond it are trimmed
#: (glibc's initial values, kept from rising).
PINNED_THRESHOLD = 128 * 1024
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD, _M_ARENA_MAX = -1, -3, -8    # mallopt, glibc's malloc.h

try:
    _LIBC = ctypes.CDLL(ctypes.util.find_library('c') or 'libc.so.6')
    _TRIM, _MALLOPT = _LIBC.malloc_trim, _LIBC.mallopt
except (OSError, AttributeError):        # not glibc
    _TRIM = _MALLOPT = None


def restart_on_system_allocator(environ=os.environ):
    """Replace this process (same PID, same arguments) by one whose Python objects live in
    glibc's allocator (``PYTHONMALLOC=malloc``); returns only when it does nothing: not glibc,
    ``PYTHONMALLOC`` already set (by the user, or by the restart itself), or no script to run.
    """
    if _TRIM is None or environ.get('PYTHONMALLOC'):
        return
    argv = getattr(sys, 'orig_argv', None)
    if not argv or not os.path.isfile(sys.argv[0]):
        return
    environ['PYTHONMALLOC'] = 'malloc'
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(sys.executable, [sys.executable, *argv[1:]], dict(environ))


def pin_allocator_thresholds(environ=os.environ):
    """Fix glibc's mmap and trim thresholds at :data:`PINNED_THRESHOLD` and its arenas at one
    for this process, unless the user tuned malloc (``GLIBC_TUNABLES`` or ``MALLOC_*_``); True
    if pinned. Call it before any thread starts.
    """
    tuned = 'glibc.malloc' in environ.get('GLIBC_TUNABLES', '') or any(
        key.startswith('MALLOC_') and (key.endswith('_') or key.startswith('MALLOC_ARENA_'))
        for key in environ)
    if _MALLOPT is None or tuned:
        return False
    return bool(_MALLOPT(_M_MMAP_THRESHOLD, PINNED_THRESHOLD)
                and _MALLOPT(_M_TRIM_THRESHOLD, PINNED_THRESHOLD)
                and _MALLOPT(_M_ARENA_MAX, 1))


def release_free_memory():
    """Return the pages glibc holds free to the operating system (glibc only)."""
    if _TRIM is not None:
        _TRIM(0)
