"""Reading meshes and link geometry for mass properties.

Meshes are read with trimesh (STL binary and ASCII, OBJ; DAE when pycollada is installed) and
merged into one indexed triangle mesh (coincident vertices joined, scene transforms applied).
URIs as URDF writes them: ``package://pkg/path`` (through ament_index_python when a ROS
environment knows the package, else through ``search_paths``; a path that leaves its package,
``package://pkg/../other``, is refused), ``file:///abs/path``, or a path relative to the URDF's
folder. Shape sizes, scales and origins must be finite and at most :data:`MAX_LENGTH` [m].
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
import numbers
import os
from typing import Optional

import numpy as np

from . import inertia
from .checks import as_finite_array
from .exceptions import DynamicsError, MeshError
from .rotations import matrix_from_rpy

#: Largest shape size, scale factor or origin coordinate accepted (far beyond any robot; their
#: volumes and inertias stay finite).
MAX_LENGTH = inertia.MAX_LENGTH


def resolve_uri(uri: str, base_dir: Optional[str] = None, search_paths: Sequence[str] = ()) -> str:
    """Absolute path of a mesh URI; :class:`MeshError` listing what was tried otherwise."""
    tried = []
    if uri.startswith('package://'):
        package, _, relative = uri[len('package://'):].partition('/')
        inside = os.path.normpath(relative or '.')
        if not package or package in ('.', '..') or os.path.isabs(relative) or \
                inside == '..' or inside.startswith('..' + os.sep):
            raise MeshError(f'mesh {uri!r}: a package:// path must stay inside its package')
        try:
            from ament_index_python.packages import get_package_share_directory
            tried.append(os.path.join(get_package_share_directory(package), relative))
        except (ImportError, LookupError, ValueError):
            pass
        for root in search_paths:
            tried.append(os.path.join(root, package, relative))
            if os.path.basename(os.path.normpath(root)) == package:
                tried.append(os.path.join(root, relative))
    elif uri.startswith('file://'):
        tried.append(uri[len('file://'):])
    else:
        tried.append(uri if os.path.isabs(uri) or base_dir is None
                     else os.path.join(base_dir, uri))
    for path in tried:
        if os.path.isfile(path):
            return path
    hint = '' if search_paths or not uri.startswith('package://') else \
        ' (give search paths holding the package folder)'
    raise MeshError(f'cannot find mesh {uri!r}; tried {tried or "nothing"}{hint}')


def load_mesh(path: str, scale: Sequence[float] = (1.0, 1.0, 1.0)) -> tuple[np.ndarray, np.ndarray]:
    """Vertices (n, 3) and faces (m, 3) of a mesh file, scaled per axis."""
    try:
        import trimesh
    except ImportError:
        raise MeshError('reading meshes needs trimesh (pip install trimesh; rosdep '
                        'python3-trimesh)') from None
    try:
        mesh = trimesh.load(path, force='mesh', process=True)
    except Exception as err:  # noqa: BLE001 -- any reader failure becomes a typed error
        raise MeshError(f'cannot read mesh {path!r}: {err}') from None
    if not hasattr(mesh, 'faces') or len(mesh.faces) == 0:
        raise MeshError(f'mesh {path!r} holds no triangles')
    try:
        scale = np.broadcast_to(np.asarray(scale, dtype=float), (3,))
    except (TypeError, ValueError):
        raise MeshError(f'mesh scale: expected 1 or 3 numbers, got {scale!r:.200}') from None
    if not np.all(np.abs(scale) <= MAX_LENGTH):
        raise MeshError(f'mesh scale: expected finite factors of magnitude <= {MAX_LENGTH:g}, '
                        f'got {scale.tolist()}')
    vertices = np.asarray(mesh.vertices, dtype=float) * scale
    faces = np.asarray(mesh.faces, dtype=np.int64)
    if np.prod(scale) < 0:       # a mirroring scale turns the surface inside-out
        faces = faces[:, ::-1]
    return vertices, faces


def mesh_mass_properties(path: str, scale: Sequence[float] = (1, 1, 1),
                         density: Optional[float] = None, mass: Optional[float] = None, *,
                         search_paths: Sequence[str] = (),
                         base_dir: Optional[str] = None) -> inertia.MassProperties:
    """:class:`~ros_dynamics.engine.inertia.MassProperties` of the solid a mesh file bounds."""
    vertices, faces = load_mesh(resolve_uri(os.fspath(path), base_dir, search_paths), scale)
    return inertia.mass_properties(vertices, faces, density=density, mass=mass)


@dataclass(frozen=True)
class Geometry:
    """One ``<collision>`` or ``<visual>`` shape of a link.

    origin (4, 4): pose in the link frame; kind: 'box', 'cylinder', 'sphere' or 'mesh';
    size (box), radius/length (cylinder), radius (sphere), or filename and scale (mesh).
    """

    origin: np.ndarray
    kind: str
    size: tuple = ()
    radius: float = 0.0
    length: float = 0.0
    filename: str = ''
    scale: tuple = (1.0, 1.0, 1.0)


def geometry_mass_properties(geometries: Sequence[Geometry], density: Optional[float] = None,
                             mass: Optional[float] = None, *, search_paths: Sequence[str] = (),
                             base_dir: Optional[str] = None) -> inertia.MassProperties:
    """Mass properties (link frame) of the union of a link's shapes, uniform density; with
    ``mass`` the density is the one that gives that total mass.
    """
    parts = []
    for g in geometries:
        if g.kind == 'box':
            p = inertia.box_properties(g.size, density=1.0)
        elif g.kind == 'cylinder':
            p = inertia.cylinder_properties(g.radius, g.length, density=1.0)
        elif g.kind == 'sphere':
            p = inertia.sphere_properties(g.radius, density=1.0)
        else:
            p = mesh_mass_properties(g.filename, g.scale, density=1.0,
                                     search_paths=search_paths, base_dir=base_dir)
        parts.append(p.transformed(g.origin))
    unit = inertia.combine(parts)
    rho = inertia._mass_scale(unit.volume, density, mass, 'geometry') / unit.volume
    return inertia.from_moments(unit.volume, rho * unit.mass, unit.com, rho * unit.inertia_com)


def link_geometry(robot: object, kind: str = 'collision') -> dict[str, list[Geometry]]:
    """Shapes per link of a urdf_parser_py ``URDF`` object: ``{link: [Geometry, ...]}``.

    ``kind`` is 'collision' or 'visual'; a link without shapes of that kind falls back to the
    other kind. Unreadable shapes raise :class:`MeshError` naming the link.
    """
    out = {}
    other = 'visual' if kind == 'collision' else 'collision'
    for link in robot.links:
        shapes = list(getattr(link, kind + 's', None) or getattr(link, other + 's', None) or ())
        geometries = []
        for shape in shapes:
            geometry = getattr(shape, 'geometry', None)
            if geometry is None:
                continue
            try:
                geometries.append(_geometry(getattr(shape, 'origin', None), geometry))
            except (TypeError, ValueError) as err:
                raise MeshError(f'link {link.name!r}: cannot read its '
                                f'<{type(geometry).__name__.lower()}>: {err}') from None
        if geometries:
            out[link.name] = geometries
    return out


def _floats(values, count, what):
    """``values`` as ``count`` floats, finite and of magnitude <= :data:`MAX_LENGTH`."""
    if values is None:
        raise ValueError(f'{what}: expected {count} number(s), got nothing')
    try:
        array = as_finite_array(values, what, MAX_LENGTH)
    except DynamicsError as err:
        raise ValueError(str(err)) from None
    if array.ndim > 1 or array.size != count:
        raise ValueError(f'{what}: expected {count} number(s), got {values!r:.200}')
    return array.ravel().tolist()


def _geometry(pose, g):
    """:class:`Geometry` of urdf_parser_py's shape ``g`` at ``pose`` (its ``Pose`` or None)."""
    origin = np.eye(4)
    if pose is not None:
        rpy = _floats(getattr(pose, 'rpy', None) or [0, 0, 0], 3, 'rpy')
        origin[:3, :3] = matrix_from_rpy(rpy)
        origin[:3, 3] = _floats(getattr(pose, 'xyz', None) or [0, 0, 0], 3, 'xyz')
    shape = type(g).__name__
    if shape == 'Box':
        return Geometry(origin, 'box', size=tuple(_floats(g.size, 3, 'size')))
    if shape == 'Cylinder':
        return Geometry(origin, 'cylinder', radius=_floats(g.radius, 1, 'radius')[0],
                        length=_floats(g.length, 1, 'length')[0])
    if shape == 'Sphere':
        return Geometry(origin, 'sphere', radius=_floats(g.radius, 1, 'radius')[0])
    if shape == 'Mesh':
        if not isinstance(g.filename, str) or not g.filename:
            raise ValueError('a mesh needs a filename')
        scale = g.scale
        if isinstance(scale, numbers.Real):           # a scalar scale, as some writers give
            scale = [scale] * 3
        scale = (1.0, 1.0, 1.0) if scale is None else tuple(_floats(scale, 3, 'scale'))
        return Geometry(origin, 'mesh', filename=g.filename, scale=scale)
    raise ValueError(f'unknown geometry {shape}')
