"""Robot descriptions from URDF: parsing with urdf_parser_py, validation on top.

urdf_parser_py is lenient (unknown tags only print, missing limit bounds default to 0, duplicate
names overwrite each other, numbers are not checked), so the XML is checked here first, element by
element, and every fault raises :class:`UrdfError` naming the element. What passes is turned into
the :class:`~ros_dynamics.engine.tree.LinkSpec` / :class:`~ros_dynamics.engine.tree.JointSpec`
records the model is built from.
"""
import contextlib
import math
import os
import xml.etree.ElementTree as ET

import numpy as np

from .exceptions import DynamicsError, UrdfError
from .rotations import matrix_from_rpy
from .tree import JOINT_TYPES, MOVING_TYPES, Inertial, JointSpec, LinkSpec, MimicSpec, moved_links


def read_urdf_file(path):
    """Text of a URDF file; :class:`UrdfError` when it cannot be read."""
    try:
        with open(os.fspath(path), encoding='utf-8') as f:
            return f.read()
    except (OSError, UnicodeDecodeError) as err:
        raise UrdfError(f'cannot read URDF file {os.fspath(path)!r}: {err}') from err


def parse_urdf(xml, *, fill_inertials_density=None, base_dir=None, mesh_search_paths=()):
    """Parse URDF text into ``(robot_name, links, joints, notes)``.

    ``notes`` lists, with ``fill_inertials_density`` [kg/m^3], the links moved by joints that had
    no ``<inertial>`` and got one from their collision (else visual) geometry (empty
    otherwise); mesh URIs are resolved against ``base_dir`` and ``mesh_search_paths``. Tags the
    model does not read (geometry, transmissions, simulator extensions) are ignored silently.
    Raises :class:`UrdfError` for anything that is not a well-formed, numerically valid
    description.
    """
    if not isinstance(xml, str):
        raise UrdfError(f'robot description: expected URDF text (str), got {type(xml).__name__}')
    if not xml.strip():
        raise UrdfError('robot description is empty')
    try:
        root = ET.fromstring(xml)
    except ET.ParseError as err:
        raise UrdfError(f'robot description is not valid XML: {err}') from None
    if root.tag != 'robot':
        raise UrdfError(f'robot description: root element is <{root.tag}>, expected <robot>')
    _validate_xml(root)
    robot = _parse_with_urdf_parser_py(_kinematic_xml(root))
    links = [LinkSpec(link.name, _inertial(link)) for link in robot.links]
    joints = [_joint_spec(j) for j in robot.joints]
    notes = []
    if fill_inertials_density is not None:
        links, notes = _fill_inertials(root, links, joints, fill_inertials_density, base_dir,
                                       mesh_search_paths)
    return robot.name or '', links, joints, notes


def _fill_inertials(root, links, joints, density, base_dir, search_paths):
    from .meshes import geometry_mass_properties, parse_link_geometry
    moved = moved_links(joints)
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


def _kinematic_xml(root):
    """The description reduced to what the model reads: links with their inertials, joints.

    Geometry, materials, transmissions and simulator tags are dropped, so that an old-style
    ``<transmission>`` or an exotic ``<geometry>`` cannot make the parser refuse a robot whose
    kinematics and dynamics are valid.
    """
    reduced = ET.Element('robot', {'name': root.get('name', '')})
    for link in root.findall('link'):
        kept = ET.SubElement(reduced, 'link', {'name': link.get('name')})
        inertial = link.find('inertial')
        if inertial is not None:
            kept.append(inertial)
    for joint in root.findall('joint'):
        reduced.append(joint)
    return ET.tostring(reduced, encoding='unicode')


def _parse_with_urdf_parser_py(xml):
    from urdf_parser_py import xml_reflection
    from urdf_parser_py.urdf import URDF

    core = xml_reflection.core
    previous = core.on_error
    core.on_error = lambda message: None     # unknown tags: the XML was validated above
    try:
        with open(os.devnull, 'w') as devnull, contextlib.redirect_stderr(devnull):
            robot = URDF.from_xml_string(xml)
    except Exception as err:  # noqa: BLE001 -- any parser failure becomes a typed error
        raise UrdfError(f'robot description rejected by urdf_parser_py: {err}') from None
    finally:
        core.on_error = previous
    return robot


# --- XML validation ----------------------------------------------------------------------------

def _numbers(elem, attr, count, where, required=False, default=None):
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
    if not all(math.isfinite(v) for v in values):
        raise UrdfError(f'{where}: <{elem.tag} {attr}="{text}">: numbers must be finite')
    return values


def _validate_origin(parent, where):
    origin = parent.find('origin')
    if origin is not None:
        _numbers(origin, 'xyz', 3, where)
        _numbers(origin, 'rpy', 3, where)


def _validate_xml(root):
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
    for link in root.findall('link'):
        inertial = link.find('inertial')
        if inertial is None:
            continue
        where = f'link {link.get("name")!r} <inertial>'
        _validate_origin(inertial, where)
        mass = inertial.find('mass')
        if mass is None:
            raise UrdfError(f'{where}: missing <mass>')
        _numbers(mass, 'value', 1, where, required=True)
        inertia = inertial.find('inertia')
        if inertia is None:
            raise UrdfError(f'{where}: missing <inertia>')
        for key in ('ixx', 'ixy', 'ixz', 'iyy', 'iyz', 'izz'):
            _numbers(inertia, key, 1, where, required=True)
    for joint in root.findall('joint'):
        name = joint.get('name')
        where = f'joint {name!r}'
        jtype = joint.get('type')
        if jtype is None:
            raise UrdfError(f'{where}: missing type attribute')
        if jtype not in JOINT_TYPES:
            raise UrdfError(f'{where}: unsupported type {jtype!r}; supported types: '
                            f'{", ".join(JOINT_TYPES)} (floating and planar joints are not '
                            'supported: the URDF root link is the fixed base)')
        for role in ('parent', 'child'):
            elem = joint.find(role)
            if elem is None or not elem.get('link'):
                raise UrdfError(f'{where}: missing <{role} link="...">')
        _validate_origin(joint, where)
        axis = joint.find('axis')
        if axis is not None:
            _numbers(axis, 'xyz', 3, where, required=True)
        limit = joint.find('limit')
        if jtype in ('revolute', 'prismatic') and limit is None:
            raise UrdfError(f'{where}: a {jtype} joint needs a <limit> element')
        if limit is not None and jtype in MOVING_TYPES:
            for key in ('lower', 'upper'):
                _numbers(limit, key, 1, where)
            for key in ('effort', 'velocity'):
                _numbers(limit, key, 1, where, required=True)
        dynamics = joint.find('dynamics')
        if dynamics is not None:
            for key in ('damping', 'friction'):
                _numbers(dynamics, key, 1, where)
        mimic = joint.find('mimic')
        if mimic is not None:
            if not mimic.get('joint'):
                raise UrdfError(f'{where}: <mimic> is missing attribute \'joint\'')
            for key in ('multiplier', 'offset'):
                _numbers(mimic, key, 1, where)


# --- conversion to specs -----------------------------------------------------------------------

def _pose(origin):
    T = np.eye(4)
    if origin is not None:
        T[:3, :3] = matrix_from_rpy(origin.rpy if origin.rpy is not None else [0.0] * 3)
        T[:3, 3] = origin.xyz if origin.xyz is not None else [0.0] * 3
    return T


def _inertial(link):
    inertial = link.inertial
    if inertial is None:
        return None
    T = _pose(inertial.origin)
    R = T[:3, :3]
    I_bar = np.array(inertial.inertia.to_matrix(), dtype=float) if inertial.inertia is not None \
        else np.zeros((3, 3))
    return Inertial(mass=float(inertial.mass), com=T[:3, 3].copy(), inertia=R @ I_bar @ R.T)


def _joint_spec(j):
    axis = np.array(j.axis if j.axis is not None else [1.0, 0.0, 0.0], dtype=float)
    norm = np.linalg.norm(axis)
    if j.type != 'fixed' and norm > 0:
        axis = axis / norm
    limit = j.limit
    lower, upper = -np.inf, np.inf
    velocity = effort = np.inf
    if limit is not None:
        velocity = float(limit.velocity) if limit.velocity is not None else np.inf
        effort = float(limit.effort) if limit.effort is not None else np.inf
        if j.type != 'continuous':
            lower = float(limit.lower) if limit.lower is not None else 0.0
            upper = float(limit.upper) if limit.upper is not None else 0.0
    damping = friction = 0.0
    if j.dynamics is not None:
        damping = float(j.dynamics.damping or 0.0)
        friction = float(j.dynamics.friction or 0.0)
    mimic = None
    if j.mimic is not None:
        m = j.mimic
        mimic = MimicSpec(joint=m.joint,
                          multiplier=1.0 if m.multiplier is None else float(m.multiplier),
                          offset=0.0 if m.offset is None else float(m.offset))
    return JointSpec(name=j.name, type=j.type, parent=j.parent, child=j.child,
                     origin=_pose(j.origin), axis=axis, lower=lower, upper=upper,
                     velocity=velocity, effort=effort, damping=damping, friction=friction,
                     mimic=mimic)
