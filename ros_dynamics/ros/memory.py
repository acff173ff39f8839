"""Giving freed memory back to the operating system after a huge input (glibc only).

A joint state with a million names, say, is deserialised into hundreds of MB that are freed
right after. Two things of glibc's would keep much of it resident for the rest of the run:

- After freeing a large block, glibc raises its mmap threshold to that block's size (up to
  32 MB) and its trim threshold to twice that, so later blocks of tens of MB come from the
  arenas, whose free tops are then kept (``malloc_trim`` does not shrink a thread arena's top).
  :func:`pin_allocator_thresholds` fixes both at glibc's initial 128 kB at start-up, which also
  turns the raising off: every large block gets pages of its own, unmapped when freed.
- Freed small blocks stay with the allocator; :func:`release_free_memory` (after a huge input)
  asks glibc to return the pages they free (``malloc_trim``).

Elsewhere both do nothing.
"""
import ctypes
import ctypes.util
import os

#: Inputs with more entries than this (names, points, bytes / 1000) ask for a release.
HUGE_INPUT = 10_000
#: Blocks of at least this many bytes are mapped on their own; free tops beyond it are trimmed
#: (glibc's initial values, kept from rising).
PINNED_THRESHOLD = 128 * 1024
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3     # mallopt parameters, from glibc's malloc.h

try:
    _LIBC = ctypes.CDLL(ctypes.util.find_library('c') or 'libc.so.6')
    _TRIM, _MALLOPT = _LIBC.malloc_trim, _LIBC.mallopt
except (OSError, AttributeError):        # not glibc
    _TRIM = _MALLOPT = None


def pin_allocator_thresholds(environ=os.environ):
    """Fix glibc's mmap and trim thresholds at :data:`PINNED_THRESHOLD` for this process,
    unless the user tuned malloc (``GLIBC_TUNABLES`` or ``MALLOC_*_``); True if pinned.
    """
    tuned = 'glibc.malloc' in environ.get('GLIBC_TUNABLES', '') or any(
        key.startswith('MALLOC_') and key.endswith('_') for key in environ)
    if _MALLOPT is None or tuned:
        return False
    return bool(_MALLOPT(_M_MMAP_THRESHOLD, PINNED_THRESHOLD)
                and _MALLOPT(_M_TRIM_THRESHOLD, PINNED_THRESHOLD))


def release_free_memory():
    """Return the memory freed since the last call to the operating system (glibc only)."""
    if _TRIM is not None:
        _TRIM(0)
