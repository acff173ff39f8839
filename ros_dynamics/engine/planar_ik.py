"""Closed-form inverse kinematics of planar 2R and 3R arms (both elbow branches).

Arm in the x-y plane, joint angles measured from x, link lengths l1, l2 (, l3) [m]:
``x = l1 cos q1 + l2 cos(q1 + q2) (+ l3 cos(q1 + q2 + q3))``, likewise y. A target at distance r
from the base is reachable by the 2R arm iff ``|l1 - l2| <= r <= l1 + l2``.
"""

import numpy as np

from .exceptions import InvalidInputError


def planar_2r_ik(l1: float, l2: float, x: float, y: float) -> list[tuple[float, float]]:
    """Solutions ``[(q1, q2), ...]`` [rad] reaching (x, y): elbow-down (q2 >= 0) first, then
    elbow-up; one solution at the workspace boundary; ``[]`` when unreachable.
    """
    if not (l1 > 0 and l2 > 0):
        raise InvalidInputError(f'link lengths must be > 0, got {l1}, {l2}')
    r2 = x * x + y * y
    c2 = (r2 - l1 * l1 - l2 * l2) / (2 * l1 * l2)
    tol = 1e-12
    if c2 > 1 + tol or c2 < -1 - tol:
        return []
    c2 = float(np.clip(c2, -1.0, 1.0))
    s2 = np.sqrt(max(0.0, 1 - c2 * c2))
    solutions = []
    for sign in ((1.0,) if s2 < 1e-12 else (1.0, -1.0)):
        q2 = np.arctan2(sign * s2, c2)
        q1 = np.arctan2(y, x) - np.arctan2(l2 * np.sin(q2), l1 + l2 * np.cos(q2))
        solutions.append((float(np.angle(np.exp(1j * q1))), float(q2)))
    return solutions


def planar_3r_ik(l1: float, l2: float, l3: float, x: float, y: float,
                 phi: float) -> list[tuple[float, float, float]]:
    """Solutions ``[(q1, q2, q3), ...]`` [rad] putting the tip at (x, y) with orientation
    ``phi = q1 + q2 + q3`` [rad]: the wrist point is solved as a 2R arm.
    """
    if not l3 > 0:
        raise InvalidInputError(f'link lengths must be > 0, got {l3}')
    wx, wy = x - l3 * np.cos(phi), y - l3 * np.sin(phi)
    return [(q1, q2, float(np.angle(np.exp(1j * (phi - q1 - q2)))))
            for q1, q2 in planar_2r_ik(l1, l2, wx, wy)]
