"""Checks of array arguments at the engine's doors, before any arithmetic.

:func:`as_finite_array` turns an argument into a float array or raises a typed error: ragged
nesting is a :class:`~ros_dynamics.engine.exceptions.ShapeError`; values that are not real
numbers (complex, dates, strings, objects, integers too large for a float) and NaN, Inf or
magnitudes beyond :data:`MAX_VALUE` are an
:class:`~ros_dynamics.engine.exceptions.InvalidInputError`. Nothing is converted silently
(a complex value does not lose its imaginary part, a date is not read as a number of days).
"""
from __future__ import annotations

import datetime

import numpy as np
from numpy.typing import ArrayLike

from .exceptions import InvalidInputError, ShapeError

#: Largest magnitude of a joint position, velocity, acceleration, torque or wrench component
#: accepted: far beyond any robot (URDFs write "unlimited" as 1e16), and below where the
#: products in the dynamics (velocities squared, ~1e154) would overflow to Inf.
MAX_VALUE = 1e100


def as_finite_array(x: ArrayLike, name: str, limit: float = MAX_VALUE) -> np.ndarray:
    """``x`` as a float array of finite values of magnitude <= ``limit``.

    Raises :class:`ShapeError` for ragged nesting and :class:`InvalidInputError` for what is not
    real numbers (complex, dates, strings, objects) or for NaN, Inf and huge values.
    """
    if type(x) is np.ndarray and x.dtype == np.float64 and limit <= MAX_VALUE and \
            np.vdot(x, x) <= limit * limit:
        # The common case in one NumPy call: a sum of squares within limit^2 holds no NaN or
        # Inf and no entry beyond the limit (anything else takes the full checks below).
        return x
    if isinstance(x, np.ndarray):
        kind = x.dtype.kind
    else:
        if isinstance(x, (str, bytes, datetime.date, datetime.timedelta)):
            kind = 'U'
        else:
            try:
                kind = np.asarray(x).dtype.kind
            except ValueError:
                raise ShapeError(f'{name}: expected a rectangular array of numbers, got ragged '
                                 'nesting') from None
    if kind not in 'biuf':
        raise InvalidInputError(f'{name}: expected real numbers, got values of dtype kind '
                                f'{kind!r} ({type(x).__name__})')
    try:
        x = np.asarray(x, dtype=float)
    except (TypeError, ValueError, OverflowError):
        raise InvalidInputError(f'{name}: expected real numbers of magnitude <= '
                                f'{limit:g}') from None
    # One test catches NaN, Inf and magnitudes no joint reaches (they would overflow to Inf).
    if not (np.abs(x) <= limit).all():
        shown = x.tolist() if x.size < 50 else 'NaN/Inf or huge entries'
        raise InvalidInputError(f'{name}: expected finite values of magnitude <= '
                                f'{limit:g}, got {shown}')
    return x
