"""Smooth values, velocities and accelerations of sampled signals (recorded joint positions).

:func:`smooth_derivatives` fits, around every sample, a polynomial of degree ``polyorder`` to the
``window`` nearest samples by least squares and reads the value and the first two derivatives
of that polynomial at the sample. With evenly spaced samples this is the Savitzky-Golay filter
(Savitzky and Golay, Analytical Chemistry 36(8), 1964; ``scipy.signal.savgol_filter``); here the
fit uses the actual sample times, so uneven spacing (timestamps of a recording, dropped
messages) is handled as it is. Near both ends the window stays inside the data (as
``savgol_filter(mode='interp')``), where the estimates are less accurate: callers that can
afford it drop ``window // 2`` samples at each end.

The filter has no delay (it is not causal: it looks ahead by ``window // 2`` samples), which
suits offline identification, not a control loop.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .exceptions import InvalidInputError, ShapeError
from .kinematics import as_finite_array

ArrayLike = Any

#: Samples fitted per block of work: bounds the temporary arrays to a few megabytes.
_BLOCK = 4096


def smooth_derivatives(t: ArrayLike, x: ArrayLike, window: int = 51,
                       polyorder: int = 3) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Smoothed ``x`` and its first and second time derivatives at the sample times.

    ``t`` (n,) [s], strictly increasing; ``x`` (n,) or (n, channels) in any unit u (e.g.
    joint positions (n, nq) [rad]); ``window``: samples per fit, odd, ``polyorder < window <=
    n``; ``polyorder`` >= 2. Returns ``(x_smooth, dx_dt, d2x_dt2)``, each shaped like ``x``,
    in [u], [u/s], [u/s^2]. Raises :class:`InvalidInputError` for times that do not increase
    and for window sizes that do not fit, :class:`ShapeError` when ``t`` and ``x`` disagree.
    """
    t = as_finite_array(t, 't')
    x = as_finite_array(x, 'x')
    if t.ndim != 1 or x.ndim not in (1, 2) or x.shape[0] != t.size:
        raise ShapeError(f'x: expected shape (n,) or (n, channels) with n = {t.size} samples '
                         f'(the length of t {t.shape}), got {x.shape}')
    window, polyorder = int(window), int(polyorder)
    if window % 2 == 0 or not 2 <= polyorder < window:
        raise InvalidInputError(f'window, polyorder: expected an odd window > polyorder >= 2, '
                                f'got window={window}, polyorder={polyorder}')
    if window > t.size:
        raise InvalidInputError(f'window: expected at most the {t.size} samples given, got '
                                f'{window}')
    if not np.all(np.diff(t) > 0):
        bad = int(np.argmin(np.diff(t)))
        raise InvalidInputError(f't: expected strictly increasing times, got t[{bad}] = '
                                f'{float(t[bad])!r} followed by {float(t[bad + 1])!r}')
    channels = x.reshape(t.size, -1)
    out = np.empty((3,) + channels.shape)
    powers = np.arange(polyorder + 1)
    for start in range(0, t.size, _BLOCK):
        rows = np.arange(start, min(start + _BLOCK, t.size))
        first = np.clip(rows - window // 2, 0, t.size - window)
        idx = first[:, None] + np.arange(window)
        offset = t[idx] - t[rows][:, None]                       # (rows, window) [s]
        scale = np.max(np.abs(offset), axis=1, keepdims=True)    # keeps the fit well scaled
        vandermonde = (offset / scale)[..., None] ** powers      # (rows, window, order + 1)
        coefficients = np.linalg.pinv(vandermonde)[:, :3] @ channels[idx]  # (rows, 3, ch)
        out[0, rows] = coefficients[:, 0]
        out[1, rows] = coefficients[:, 1] / scale
        out[2, rows] = 2.0 * coefficients[:, 2] / scale ** 2
    return tuple(o.reshape(x.shape) for o in out)
