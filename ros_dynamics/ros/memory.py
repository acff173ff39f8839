"""Giving freed memory back to the operating system after a huge input.

A joint state with a million names, say, is deserialised into hundreds of MB that Python frees
right after; glibc keeps the freed pages for later use, so the process would look as large as
at its peak for the rest of the run. :func:`release_free_memory` asks glibc to return them
(``malloc_trim``); elsewhere it does nothing.
"""
import ctypes
import ctypes.util

#: Inputs with more entries than this (names, points, bytes / 1000) ask for a release.
HUGE_INPUT = 10_000

try:
    _LIBC = ctypes.CDLL(ctypes.util.find_library('c') or 'libc.so.6')
    _TRIM = _LIBC.malloc_trim
except (OSError, AttributeError):        # not glibc
    _TRIM = None


def release_free_memory():
    """Return the memory freed since the last call to the operating system (glibc only)."""
    if _TRIM is not None:
        _TRIM(0)
