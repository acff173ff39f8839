"""Centroidal momentum: the momentum of the whole robot about its center of mass.

``h_G = [linear; angular]`` (6,) [kg m/s, kg m^2/s], in world axes with the angular part about the
center of mass ``c`` of the moving bodies, is linear in the velocity: ``h_G = A_G(q) v`` with the
centroidal momentum matrix ``A_G`` (6, nv) -- Pinocchio's ``ccrba`` and
``computeCentroidalMomentum``. Rotor inertia is not part of it (as in Pinocchio).

Computed in world coordinates: the momentum at the world origin is ``h_O = sum_b I_b v_b``, whose
column for degree of freedom k is ``Ic_k S_k`` (the composite inertia of what k moves times its
motion, :func:`~ros_dynamics.engine.crba.subtree_momenta`); moving the reference point to ``c``
keeps the linear part and takes ``c x linear`` off the angular part.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .crba import subtree_momenta
from .exceptions import InvalidInputError
from .rnea import apply_inertia, center_of_mass, world_inertias
from .rotations import cross

if TYPE_CHECKING:
    from .kinematics import KinematicState
    from .model import Model


def _about_center_of_mass(model, state, h_O):
    """Momenta ``h_O`` (..., k, 6) at the world origin moved to the center of mass."""
    c = center_of_mass(model, state)[..., None, :]
    return np.concatenate([h_O[..., :3], h_O[..., 3:] - cross(c, h_O[..., :3])], axis=-1)


def centroidal_momentum_matrix(model: Model, state: KinematicState):
    """``A_G(q)`` (..., 6, nv): ``h_G = A_G v`` (see the module docstring)."""
    columns = _about_center_of_mass(model, state, subtree_momenta(model, state))
    return model.to_independent_columns(np.swapaxes(columns, -1, -2))


def centroidal_momentum(model: Model, state: KinematicState):
    """``h_G`` (..., 6) ``[linear; angular]`` of a state computed with q and qd."""
    if state.V_world_body is None:
        raise InvalidInputError('centroidal momentum needs q and qd')
    mass, com, inertia = world_inertias(state.settings, state)
    h_O = np.sum(apply_inertia(mass, com, inertia, state.V_world_body), axis=-2)
    return _about_center_of_mass(model, state, h_O[..., None, :])[..., 0, :]
