"""Mass properties of closed triangle meshes and URDF primitives; principal axes.

A closed, consistently oriented (outward normals) triangle mesh bounds a solid. Each triangle
``(a, b, c)`` and an arbitrary origin O span a tetrahedron of signed volume
``v = a . (b x c) / 6``; summing over all triangles, the parts outside the solid cancel, so the
origin may lie anywhere. Per tetrahedron (vertices O, a, b, c relative to O) the first moment is
``v (a + b + c) / 4`` and the second moment ``int x x^T dV = v / 20 (a a^T + b b^T + c c^T +
s s^T)`` with ``s = a + b + c`` (Tonon 2004; Eberly, *Polyhedral Mass Properties*). The inertia
about O is ``tr(C) E - C``; the parallel-axis theorem moves it to the center of mass, and a
rotation R gives ``I' = R I R^T``.

Units: lengths in the mesh's units after ``scale`` (URDF: [m]), density [kg/m^3], mass [kg],
inertia [kg m^2].
"""
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Optional

import numpy as np
from numpy.typing import ArrayLike

from .exceptions import InvalidInputError, MeshError, ShapeError
from .rotations import rpy_from_matrix
from .spatial import lump_inertias, parallel_axis

DEFAULT_DENSITY = 1000.0  # [kg/m^3], water: the default when neither density nor mass is given
#: Largest vertex coordinate, shape size or scale accepted [m] (far beyond any robot; volumes and
#: inertias of what is within stay finite: (1e6)^5 is far below the largest float).
MAX_LENGTH = 1e6


@dataclass(frozen=True)
class MassProperties:
    """Mass properties of a solid, in the coordinates of its mesh (or primitive).

    volume [m^3]; mass [kg]; density [kg/m^3]; com (3,) [m]; inertia_com (3, 3) about the center
    of mass, mesh axes; inertia_origin (3, 3) about the mesh origin; principal_moments (3,)
    ascending; principal_axes (3, 3), columns the axes (a right-handed rotation);
    principal_rpy (3,): the same rotation as URDF roll-pitch-yaw, so that
    ``<inertial><origin xyz=com rpy=principal_rpy/>`` with diagonal ``principal_moments``
    describes the solid.
    """

    volume: float
    mass: float
    density: float
    com: np.ndarray
    inertia_com: np.ndarray
    inertia_origin: np.ndarray
    principal_moments: np.ndarray
    principal_axes: np.ndarray
    principal_rpy: np.ndarray

    def inertia_about(self, point):
        """Inertia (3, 3) about ``point`` (3,) [m], mesh axes."""
        point = np.asarray(point, dtype=float)
        return self.inertia_com + parallel_axis(self.mass, self.com - point)

    def transformed(self, T):
        """The same solid moved by the rigid transform ``T`` (4, 4): ``I' = R I R^T``."""
        R, t = T[:3, :3], T[:3, 3]
        return from_moments(self.volume, self.mass, R @ self.com + t,
                            R @ self.inertia_com @ R.T)


def principal(inertia: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Ascending principal moments (3,) and axes (3, 3) (columns, right-handed) of a
    symmetric inertia.
    """
    moments, axes = np.linalg.eigh(0.5 * (inertia + inertia.T))
    if np.linalg.det(axes) < 0:
        axes[:, 2] = -axes[:, 2]
    return moments, axes


def from_moments(volume: float, mass: float, com: ArrayLike,
                 inertia_com: np.ndarray) -> MassProperties:
    """:class:`MassProperties` from the mass, center of mass and inertia about it."""
    com = np.asarray(com, dtype=float)
    inertia_com = 0.5 * (inertia_com + inertia_com.T)
    moments, axes = principal(inertia_com)
    density = mass / volume if volume > 0 else float('nan')
    return MassProperties(float(volume), float(mass), float(density), com, inertia_com,
                          inertia_com + parallel_axis(mass, com), moments, axes,
                          rpy_from_matrix(axes))


def _mass_scale(volume, density, mass, what):
    if density is not None and mass is not None:
        raise InvalidInputError(f'{what}: give density or mass, not both')
    if mass is not None:
        if not (np.isfinite(mass) and mass > 0):
            raise InvalidInputError(f'{what}: mass must be finite and > 0, got {mass}')
        return float(mass)
    rho = DEFAULT_DENSITY if density is None else density
    if not (np.isfinite(rho) and rho > 0):
        raise InvalidInputError(f'{what}: density must be finite and > 0, got {rho}')
    return float(rho) * volume


def mesh_problems(faces: np.ndarray, n_vertices: int) -> list[str]:
    """Why a triangle mesh does not bound a solid (empty when it is closed and consistently
    oriented): every directed edge must appear once and its reverse once.
    """
    faces = np.asarray(faces)
    edges = np.concatenate([faces[:, [0, 1]], faces[:, [1, 2]], faces[:, [2, 0]]])
    problems = []
    if faces.size and (faces.min() < 0 or faces.max() >= n_vertices):
        return [f'face indices must lie in [0, {n_vertices})']
    key = edges[:, 0].astype(np.int64) * (n_vertices + 1) + edges[:, 1]
    uniq, counts = np.unique(key, return_counts=True)
    if np.any(counts > 1):
        problems.append(f'{int(np.sum(counts > 1))} edges are used twice in the same direction '
                        '(inconsistent orientation or non-manifold)')
    reverse = edges[:, 1].astype(np.int64) * (n_vertices + 1) + edges[:, 0]
    missing = ~np.isin(reverse, uniq)
    if np.any(missing):
        problems.append(f'{int(np.sum(missing))} edges have no opposite edge (the mesh is not '
                        'closed)')
    return problems


def mass_properties(vertices: ArrayLike, faces: ArrayLike, density: Optional[float] = None,
                    mass: Optional[float] = None, *, check: bool = True) -> MassProperties:
    """Mass properties of the solid bounded by a closed triangle mesh.

    vertices (n, 3) [m], faces (m, 3) vertex indices, counter-clockwise seen from outside.
    ``density`` [kg/m^3] or ``mass`` [kg] (the mesh then has uniform density mass / volume);
    neither: :data:`DEFAULT_DENSITY`. Raises :class:`MeshError` for a mesh that is not closed,
    not consistently oriented, or inside-out (negative volume); ``check=False`` skips the
    topology test (the volume sign is always checked).
    """
    V = np.asarray(vertices, dtype=float)
    F = np.asarray(faces)
    if V.ndim != 2 or V.shape[1] != 3:
        raise ShapeError(f'vertices: expected shape (n, 3), got {V.shape}')
    if F.ndim != 2 or F.shape[1] != 3 or not np.issubdtype(F.dtype, np.integer):
        raise ShapeError(f'faces: expected integer indices of shape (m, 3), got {F.shape} '
                         f'{F.dtype}')
    if not np.all(np.abs(V) <= MAX_LENGTH):
        raise InvalidInputError(f'vertices: expected finite coordinates of magnitude <= '
                                f'{MAX_LENGTH:g} m')
    if check:
        problems = mesh_problems(F, len(V))
        if problems:
            raise MeshError('the mesh does not bound a solid: ' + '; '.join(problems))
    # The tetrahedra's apex may be anywhere; the vertex centroid keeps the sums small and
    # avoids cancellation when the mesh lies far from its frame's origin.
    center = V.mean(axis=0)
    a, b, c = V[F[:, 0]] - center, V[F[:, 1]] - center, V[F[:, 2]] - center
    v = np.einsum('ij,ij->i', a, np.cross(b, c)) / 6.0
    volume = float(np.sum(v))
    size = max(float(np.max(np.abs(V - center))), 1e-300) ** 3    # the mesh's own extent
    if volume <= 1e-12 * size:
        raise MeshError(f'the mesh encloses a volume of {volume:.3g} (<= 0): it is inside-out '
                        '(faces wound clockwise seen from outside) or flat')
    s = a + b + c
    first = np.sum(v[:, None] * s, axis=0) / 4.0
    C = np.einsum('i,ij,ik->jk', v, a, a) + np.einsum('i,ij,ik->jk', v, b, b) \
        + np.einsum('i,ij,ik->jk', v, c, c) + np.einsum('i,ij,ik->jk', v, s, s)
    C /= 20.0
    m = _mass_scale(volume, density, mass, 'mass_properties')
    rho = m / volume
    com_rel = first / volume
    inertia_center = rho * (np.trace(C) * np.eye(3) - C)
    inertia_com = inertia_center - parallel_axis(m, com_rel)
    return from_moments(volume, m, com_rel + center, inertia_com)


def box_properties(size: ArrayLike, density: Optional[float] = None,
                   mass: Optional[float] = None) -> MassProperties:
    """Solid box of edge lengths ``size`` (3,) [m] centred at the origin (URDF ``<box>``)."""
    x, y, z = (float(v) for v in size)
    if min(x, y, z) <= 0:
        raise InvalidInputError(f'box size must be > 0, got {size}')
    volume = x * y * z
    m = _mass_scale(volume, density, mass, 'box')
    I = m / 12.0 * np.diag([y * y + z * z, x * x + z * z, x * x + y * y])
    return from_moments(volume, m, np.zeros(3), I)


def cylinder_properties(radius: float, length: float, density: Optional[float] = None,
                        mass: Optional[float] = None) -> MassProperties:
    """Solid cylinder along z centred at the origin (URDF ``<cylinder>``), [m]."""
    if radius <= 0 or length <= 0:
        raise InvalidInputError(f'cylinder radius and length must be > 0, got {radius}, {length}')
    volume = np.pi * radius * radius * length
    m = _mass_scale(volume, density, mass, 'cylinder')
    side = m * (3 * radius * radius + length * length) / 12.0
    return from_moments(volume, m, np.zeros(3), np.diag([side, side, 0.5 * m * radius * radius]))


def sphere_properties(radius: float, density: Optional[float] = None,
                      mass: Optional[float] = None) -> MassProperties:
    """Solid sphere centred at the origin (URDF ``<sphere>``), [m]."""
    if radius <= 0:
        raise InvalidInputError(f'sphere radius must be > 0, got {radius}')
    volume = 4.0 / 3.0 * np.pi * radius ** 3
    m = _mass_scale(volume, density, mass, 'sphere')
    return from_moments(volume, m, np.zeros(3), np.eye(3) * 0.4 * m * radius * radius)


def combine(parts: Iterable[MassProperties]) -> MassProperties:
    """Mass properties of a rigid union of solids given in one frame (masses add)."""
    parts = list(parts)
    if not parts:
        raise InvalidInputError('combine: no parts')
    mass, com, inertia = lump_inertias([p.mass for p in parts], [p.com for p in parts],
                                       [p.inertia_com for p in parts])
    return from_moments(sum(p.volume for p in parts), mass, com, inertia)
