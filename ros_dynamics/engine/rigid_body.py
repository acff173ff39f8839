"""Dynamics of a single free rigid body (Euler's equations)."""
import numpy as np
from numpy.typing import ArrayLike

from .rotations import as_matrices, as_vectors, cross


def euler_angular_acceleration(inertia: ArrayLike, omega: ArrayLike,
                               torque: ArrayLike) -> np.ndarray:
    """Angular acceleration [rad/s^2] of a free rigid body from Euler's equations.

    ``I w_dot + w x (I w) = n``, all in one frame fixed to the body (body axes) with the
    inertia ``inertia`` (..., 3, 3) [kg m^2] about the center of mass, the angular velocity
    ``omega`` (..., 3) [rad/s] and the applied moment about the center of mass ``torque``
    (..., 3) [N m]. Returns ``w_dot`` (..., 3) in the same axes.
    """
    inertia = as_matrices(inertia, 3, 'inertia')
    omega = as_vectors(omega, 3, 'omega')
    torque = as_vectors(torque, 3, 'torque')
    Iw = (inertia @ omega[..., None])[..., 0]
    return np.linalg.solve(inertia, (torque - cross(omega, Iw))[..., None])[..., 0]
