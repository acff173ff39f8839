"""Robot descriptions from URDF: one pass over the XML, validated element by element.

The text is parsed once (``xml.etree``, which refuses external entities and entity expansion
bombs), every number is checked where it is read, and every fault raises :class:`UrdfError`
naming the element. What passes becomes the :class:`~ros_dynamics.engine.tree.LinkSpec` /
:class:`~ros_dynamics.engine.tree.JointSpec` records the model is built from.

Lenient where Pinocchio's URDF reader is, each leniency noted in the model's warnings: whitespace
before the XML declaration; a default namespace on ``<robot>``; prefixes never declared
(``drake:`` attributes, leftover ``xacro:`` tags), whose elements and attributes are ignored;
an ``<inertial>`` with a mass but no ``<inertia>`` (a point mass); a ``<mimic>`` of a joint that
does not exist (the joint stays independent; an error with ``strict``). Tags the model does not
read (geometry, transmissions, simulator extensions) are ignored silently.

``floating`` and ``planar`` joints are read as Pinocchio reads them: a free flyer, and a planar
joint moving in its frame's x-y plane; their ``<axis>`` and ``<limit>`` are ignored (an
``<axis>`` other than z on a planar joint is noted).
"""
from __future__ import annotations

import os
import re
import xml.etree.ElementTree as ET

import numpy as np

from .checks import MAX_VALUE
from .exceptions import DynamicsError, UrdfError
from .joints import ONE_DOF_TYPES
from .rotations import matrix_from_rpy
from .tree import JOINT_TYPES, Inertial, JointSpec, LinkSpec, MimicSpec, moved_links

_PREFIXED = re.compile(r'</?([A-Za-z_][\w.-]*):[A-Za-z_]|\s([A-Za-z_][\w.-]*):[A-Za-z_][\w.-]*\s*=')
_DECLARED = re.compile(r'xmlns:([A-Za-z_][\w.-]*)\s*=')


def read_urdf_file(path: str):
    """Text of a URDF file; :class:`UrdfError` when it cannot be read."""
    try:
        with open(os.fspath(path), encoding='utf-8') as f:
            return f.read()
    except (OSError, UnicodeDecodeError) as err:
        raise UrdfError(f'cannot read URDF file {os.fspath(path)!r}: {err}') from err


def parse_urdf(xml, *, strict=False, fill_inertials_density=None, base_dir=None,
               mesh_search_paths=(), root_joint=None):
    """Parse URDF text into ``(robot_name, links, joints, notes)``.

    ``notes`` lists the leniencies applied (see the module docstring) and, with
    ``fill_inertials_density`` [kg/m^3], the links moved by joints that had no ``<inertial>``
    and got one from their collision (else visual) geometry; mesh URIs are resolved against
    ``base_dir`` and ``mesh_search_paths`` (with a ``root_joint`` every link counts as moved).
    Raises :class:`UrdfError` for anything that is not a
    well-formed, numerically valid description.
    """
    if not isinstance(xml, str):
        raise UrdfError(f'robot description: expected URDF text (str), got {type(xml).__name__}')
    if not xml.strip():
        raise UrdfError('robot description is empty')
    notes = []
    root = _parse_xml(xml.lstrip(), notes)
    _check_names(root)
    links = [LinkSpec(link.get('name'), _inertial(link, notes)) for link in root.findall('link')]
    joints = [_joint_spec(joint, notes) for joint in root.findall('joint')]
    joints = _drop_unknown_mimics(joints, strict, notes)
    if fill_inertials_density is not None:
        links, filled = _fill_inertials(root, links, joints, fill_inertials_density, base_dir,
                                        mesh_search_paths, root_joint is not None)
        notes += filled
    return root.get('name', ''), links, joints, notes


def _parse_xml(xml, notes):
    """The ``<robot>`` element, namespaces resolved (see the module docstring)."""
    declared = set(_DECLARED.findall(xml))
    undeclared = sorted({p for pair in _PREFIXED.findall(xml) for p in pair if p}
                        - declared - {'xml', 'xmlns'})
    if undeclared:
        declarations = ''.join(f' xmlns:{p}="urn:ros-dynamics:undeclared:{p}"'
                               for p in undeclared)
        xml, count = re.subn(r'<robot(?=[\s>/])', '<robot' + declarations, xml, count=1)
        if count:
            notes.append(f'ignored elements and attributes of undeclared XML prefixes '
                         f'{undeclared}')
    try:
        root = ET.fromstring(xml)
    except ET.ParseError as err:
        raise UrdfError(f'robot description is not valid XML: {err}') from None
    if root.tag.startswith('{'):
        namespace = root.tag[:root.tag.index('}') + 1]
        for elem in root.iter():
            if isinstance(elem.tag, str) and elem.tag.startswith(namespace):
                elem.tag = elem.tag[len(namespace):]
    if root.tag != 'robot':
        raise UrdfError(f'robot description: root element is <{root.tag}>, expected <robot>')
    return root


def _check_names(root):
    seen = {'link': set(), 'joint': set()}
    for kind in ('link', 'joint'):
        for elem in root.findall(kind):
            name = elem.get('name')
            if not name:
                raise UrdfError(f'a <{kind}> has no name attribute')
            if name in seen[kind]:
                raise UrdfError(f'duplicate {kind} name {name!r}')
            seen[kind].add(name)
    if not seen['link']:
        raise UrdfError('the robot has no <link>')


#: Largest magnitude of each kind of number a description may hold: far beyond any robot, and
#: low enough that the sums and products of the dynamics stay finite (a chain of 10,000 origins
#: of 1e6 m, a mass of 1e6 kg at that distance). Limits may say "unlimited" with 1e16.
BOUNDS = {'length': 1e6, 'angle': 1e6, 'axis': 1e6, 'mass': 1e6, 'inertia': 1e6,
          'mimic': 1e6, 'dynamics': 1e9, 'limit': MAX_VALUE}


def _numbers(elem, attr, count, where, required=False, default=None, kind='limit'):
    """The ``count`` numbers of an attribute (a list; one number unwrapped), or ``default``;
    each finite and of magnitude at most ``BOUNDS[kind]``.
    """
    text = elem.get(attr)
    if text is None:
        if required:
            raise UrdfError(f'{where}: <{elem.tag}> is missing attribute {attr!r}')
        return default
    parts = text.split()
    try:
        values = [float(p) for p in parts]
    except ValueError:
        raise UrdfError(f'{where}: <{elem.tag} {attr}="{text}">: expected {count} number(s)') \
            from None
    if len(values) != count:
        raise UrdfError(f'{where}: <{elem.tag} {attr}="{text}">: expected {count} number(s), '
                        f'got {len(values)}')
    bound = BOUNDS[kind]
    if not all(abs(v) <= bound for v in values):
        raise UrdfError(f'{where}: <{elem.tag} {attr}="{text:.200}">: numbers must be finite '
                        f'and of magnitude <= {bound:g}')
    return values[0] if count == 1 else values


def _pose(parent, where):
    """``T`` (4, 4) of the ``<origin>`` child of ``parent`` (identity when there is none)."""
    T = np.eye(4)
    origin = parent.find('origin')
    if origin is not None:
        rpy = _numbers(origin, 'rpy', 3, where, default=[0.0] * 3, kind='angle')
        if any(rpy):
            T[:3, :3] = matrix_from_rpy(rpy)
        T[:3, 3] = _numbers(origin, 'xyz', 3, where, default=[0.0] * 3, kind='length')
    return T


def _inertial(link, notes):
    inertial = link.find('inertial')
    if inertial is None:
        return None
    where = f'link {link.get("name")!r} <inertial>'
    T = _pose(inertial, where)
    mass = inertial.find('mass')
    if mass is None:
        raise UrdfError(f'{where}: missing <mass>')
    m = _numbers(mass, 'value', 1, where, required=True, kind='mass')
    inertia = inertial.find('inertia')
    if inertia is None:
        notes.append(f'link {link.get("name")!r}: <inertial> without <inertia>, taken as a '
                     'point mass')
        I_bar = np.zeros((3, 3))
    else:
        xx, xy, xz, yy, yz, zz = (_numbers(inertia, key, 1, where, required=True, kind='inertia')
                                  for key in ('ixx', 'ixy', 'ixz', 'iyy', 'iyz', 'izz'))
        I_bar = np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]])
    R = T[:3, :3]
    return Inertial(mass=m, com=T[:3, 3].copy(), inertia=R @ I_bar @ R.T)


def _joint_spec(joint, notes):
    name = joint.get('name')
    where = f'joint {name!r}'
    jtype = joint.get('type')
    if jtype is None:
        raise UrdfError(f'{where}: missing type attribute')
    if jtype not in JOINT_TYPES:
        raise UrdfError(f'{where}: unsupported type {jtype!r}; supported types: '
                        f'{", ".join(JOINT_TYPES)}')
    links = {}
    for role in ('parent', 'child'):
        elem = joint.find(role)
        if elem is None or not elem.get('link'):
            raise UrdfError(f'{where}: missing <{role} link="...">')
        links[role] = elem.get('link')
    origin = _pose(joint, where)
    axis_elem = joint.find('axis')
    axis = np.array([1.0, 0.0, 0.0]) if axis_elem is None else \
        np.array(_numbers(axis_elem, 'xyz', 3, where, required=True, kind='axis'))
    norm = np.linalg.norm(axis)
    if jtype in ONE_DOF_TYPES and norm > 0:
        axis = axis / norm
    if jtype == 'planar' and axis_elem is not None and not (
            norm > 0 and np.allclose(axis / norm, [0.0, 0.0, 1.0])):
        notes.append(f'{where}: planar joint moves in its frame\'s x-y plane (as in Pinocchio); '
                     f'<axis xyz="{axis_elem.get("xyz")}"> ignored')
    if jtype in ('floating', 'planar'):
        axis = np.array([0.0, 0.0, 1.0])
    limit = joint.find('limit')
    if jtype in ('revolute', 'prismatic') and limit is None:
        raise UrdfError(f'{where}: a {jtype} joint needs a <limit> element')
    lower, upper, velocity, effort = -np.inf, np.inf, np.inf, np.inf
    if limit is not None and jtype in ONE_DOF_TYPES:
        velocity = _numbers(limit, 'velocity', 1, where, required=True)
        effort = _numbers(limit, 'effort', 1, where, required=True)
        if jtype != 'continuous':
            lower = _numbers(limit, 'lower', 1, where, default=0.0)
            upper = _numbers(limit, 'upper', 1, where, default=0.0)
    damping = friction = 0.0
    dynamics = joint.find('dynamics')
    if dynamics is not None:
        damping = _numbers(dynamics, 'damping', 1, where, default=0.0, kind='dynamics')
        friction = _numbers(dynamics, 'friction', 1, where, default=0.0, kind='dynamics')
    mimic = None
    mimic_elem = joint.find('mimic')
    if mimic_elem is not None:
        if not mimic_elem.get('joint'):
            raise UrdfError(f'{where}: <mimic> is missing attribute \'joint\'')
        mimic = MimicSpec(joint=mimic_elem.get('joint'),
                          multiplier=_numbers(mimic_elem, 'multiplier', 1, where, default=1.0,
                                              kind='mimic'),
                          offset=_numbers(mimic_elem, 'offset', 1, where, default=0.0,
                                          kind='mimic'))
    return JointSpec(name=name, type=jtype, parent=links['parent'], child=links['child'],
                     origin=origin, axis=axis, lower=lower, upper=upper, velocity=velocity,
                     effort=effort, damping=damping, friction=friction, mimic=mimic)


def _drop_unknown_mimics(joints, strict, notes):
    """Joints whose ``<mimic>`` names no joint: made independent (an error when ``strict``)."""
    names = {j.name for j in joints}
    out = []
    for j in joints:
        if j.mimic is not None and j.mimic.joint not in names:
            message = f'joint {j.name!r}: <mimic> names unknown joint {j.mimic.joint!r}'
            if strict:
                raise UrdfError(message)
            notes.append(message + '; the joint is independent')
            j = JointSpec(**{**j.__dict__, 'mimic': None})
        out.append(j)
    return out


def _fill_inertials(root, links, joints, density, base_dir, search_paths, base_moves):
    from .meshes import geometry_mass_properties, parse_link_geometry
    moved = {link.name for link in links} if base_moves else moved_links(joints)
    missing = [link.name for link in links if link.inertial is None and link.name in moved]
    if not missing:
        return links, []
    geometry = parse_link_geometry(root, 'collision')
    filled, notes = {}, []
    for name in missing:
        if name not in geometry:
            notes.append(f'link {name!r} has neither an inertial nor a geometry to derive one')
            continue
        try:
            mp = geometry_mass_properties(geometry[name], density=density,
                                          search_paths=search_paths, base_dir=base_dir)
        except DynamicsError as err:
            raise UrdfError(f'link {name!r}: cannot derive an inertial from its geometry: '
                            f'{err}') from None
        filled[name] = Inertial(mp.mass, mp.com, mp.inertia_com)
        notes.append(f'filled the missing inertial of link {name!r} from its geometry '
                     f'(density {density:g} kg/m^3): mass {mp.mass:.4g} kg')
    return [LinkSpec(link.name, filled.get(link.name, link.inertial)) for link in links], notes
