"""Robot descriptions from URDF, read by ROS's own parser and validated element by element.

The text is parsed once, by ``urdf_parser_py`` (ROS's ``urdfdom_py``, the parser robot tools in
Python share), into its ``URDF`` object; :func:`robot_specs` then checks that object, whether
built from text here or handed over by the user (``RobotModel.from_urdf_model``): every number
finite and within :data:`BOUNDS`, every name present and unique, and every fault a
:class:`UrdfError` naming the element. What passes becomes the
:class:`~ros_dynamics.engine.tree.LinkSpec` / :class:`~ros_dynamics.engine.tree.JointSpec`
records the model is built from.

Before the parser sees the text (:func:`read_robot`): a document type declaration with entities
is refused (no external entities, no expansion bombs), and the XML is parsed by lxml with
entities, DTD loading and network access off. Lenient where Pinocchio's URDF reader is, each
leniency noted in the model's warnings: whitespace before the XML declaration; a default
namespace on ``<robot>``; prefixes never declared (``drake:`` attributes, leftover ``xacro:``
tags), whose elements and attributes are ignored, as are those of declared prefixes; an
``<inertial>`` with a mass but no ``<inertia>`` (a point mass); a ``<mimic>`` of a joint that
does not exist (the joint stays independent; an error with ``strict``). Top-level tags other than
links and joints (materials, transmissions, ``<ros2_control>``, simulator extensions) and the
materials of visuals are dropped silently; what the parser reports inside links and joints
(unknown tags and attributes) becomes one warning, with the first three.

``floating`` and ``planar`` joints are read as Pinocchio reads them: a free flyer, and a planar
joint moving in its frame's x-y plane; their ``<axis>`` and ``<limit>`` are ignored (an
``<axis>`` other than z on a planar joint is noted).
"""
from __future__ import annotations

import contextlib
import os
import re
import threading

import numpy as np

from .checks import MAX_VALUE, as_finite_array
from .exceptions import DynamicsError, UrdfError
from .joints import ONE_DOF_TYPES
from .rotations import matrix_from_rpy
from .tree import JOINT_TYPES, Inertial, JointSpec, LinkSpec, MimicSpec, moved_links

_PREFIXED_TAG = re.compile(r'</?([A-Za-z_][\w.-]*):[A-Za-z_]')
_PREFIXED_ATTRIBUTE = re.compile(r'\s([A-Za-z_][\w.-]*):[A-Za-z_][\w.-]*\s*=')
_DECLARED = re.compile(r'xmlns:([A-Za-z_][\w.-]*)\s*=')
_ENCODING = re.compile(r'^(<\?xml[^>]*?)\s+encoding\s*=\s*(?:"[^"]*"|\'[^\']*\')')
#: Children of ``<robot>`` the model is built from; the others (materials, transmissions,
#: ``<gazebo>``, ``<ros2_control>``) are dropped before the parser runs, as are the materials of
#: visuals: it would refuse an old transmission without a ``<hardwareInterface>`` or a
#: ``<texture/>`` without a file (iCub's), which a robot's dynamics do not depend on.
_ROBOT_CHILDREN = ('link', 'joint')

#: Largest magnitude of each kind of number a description may hold: far beyond any robot, and
#: low enough that the sums and products of the dynamics stay finite (a chain of 10,000 origins
#: of 1e6 m, a mass of 1e6 kg at that distance). Limits may say "unlimited" with 1e16.
BOUNDS = {'length': 1e6, 'angle': 1e6, 'axis': 1e6, 'mass': 1e6, 'inertia': 1e6,
          'mimic': 1e6, 'dynamics': 1e9, 'limit': MAX_VALUE}


def read_urdf_file(path: str):
    """Text of a URDF file; :class:`UrdfError` when it cannot be read."""
    try:
        with open(os.fspath(path), encoding='utf-8') as f:
            return f.read()
    except (OSError, UnicodeDecodeError) as err:
        raise UrdfError(f'cannot read URDF file {os.fspath(path)!r}: {err}') from err


def parse_urdf(xml, *, strict=False, fill_inertials_density=None, base_dir=None,
               mesh_search_paths=(), root_joint=None):
    """Parse URDF text into ``(robot_name, links, joints, notes)``: :func:`read_robot`, then
    :func:`robot_specs` (see there for the arguments).
    """
    robot, notes = read_robot(xml)
    name, links, joints, more = robot_specs(
        robot, strict=strict, fill_inertials_density=fill_inertials_density, base_dir=base_dir,
        mesh_search_paths=mesh_search_paths, root_joint=root_joint)
    return name, links, joints, notes + more


def read_robot(xml):
    """urdf_parser_py's ``URDF`` object of the text ``xml`` and the leniencies applied (see the
    module docstring); :class:`UrdfError` for text that is not a URDF document.
    """
    if not isinstance(xml, str):
        raise UrdfError(f'robot description: expected URDF text (str), got {type(xml).__name__}')
    if not xml.strip():
        raise UrdfError('robot description is empty')
    if '<!ENTITY' in xml:
        raise UrdfError('robot description: entity declarations (<!ENTITY ...>) are not '
                        'accepted in URDF')
    notes = []
    root = _parse_xml(xml.lstrip(), notes)
    _check_names(root)
    from urdf_parser_py import xml_reflection
    from urdf_parser_py.urdf import URDF
    with _collect_reports() as reports:
        try:
            robot = URDF.from_xml(root, xml_reflection.core.Path('robot'))
        except xml_reflection.core.ParseError as err:
            where_what = ' '.join(str(err).split()).replace('ParseError in ', '', 1)
            raise UrdfError(f'robot description: {where_what}'[:1000]) from None
        except (ValueError, TypeError, AssertionError) as err:      # raised by its objects
            raise UrdfError(f'robot description: {err}'[:1000]) from None
    if reports:      # visual names, <contact>, vendor attributes: common, and harmless here
        notes.append(f'urdf_parser_py ignored {len(reports)} tag(s) or attribute(s) it does not '
                     f'know: {"; ".join(reports[:3])}{"; ..." if len(reports) > 3 else ""}')
    return robot, notes


def _findall_in_slices(pattern, xml, size=1 << 16):
    """``pattern.findall(xml)`` for a ``pattern`` whose matches hold no ``>``, a slice of at
    least ``size`` characters at a time, each ending just after a ``>`` (so no match is cut).
    :data:`_PREFIXED_ATTRIBUTE` (no literal to skip to) takes 0.2 s over a 20 MB description
    in one call, holding the interpreter; between slices other threads (the node's 1 kHz path)
    take it. :data:`_PREFIXED_TAG` and :data:`_DECLARED` start with literals: 5-20 ms.
    """
    found, start = [], 0
    while start < len(xml):
        end = xml.find('>', start + size)
        end = len(xml) if end < 0 else end + 1
        found += pattern.findall(xml, start, end)
        start = end
    return found


def _parse_xml(xml, notes):
    """The ``<robot>`` element (lxml), namespaces resolved and foreign elements removed."""
    from lxml import etree
    declared = set(_DECLARED.findall(xml))
    used = set(_PREFIXED_TAG.findall(xml)) | set(_findall_in_slices(_PREFIXED_ATTRIBUTE, xml))
    undeclared = sorted(used - declared - {'xml', 'xmlns'})
    if undeclared:
        declarations = ''.join(f' xmlns:{p}="urn:ros-dynamics:undeclared:{p}"'
                               for p in undeclared)
        xml, count = re.subn(r'<robot(?=[\s>/])', '<robot' + declarations, xml, count=1)
        if count:
            notes.append(f'ignored elements and attributes of undeclared XML prefixes '
                         f'{undeclared}')
    parser = etree.XMLParser(resolve_entities=False, load_dtd=False, no_network=True,
                             remove_comments=True, remove_pis=True, huge_tree=False)
    # Text is already decoded: its declared encoding (lxml refuses one on text) is dropped.
    xml = _ENCODING.sub(r'\1', xml, count=1)
    try:
        root = etree.fromstring(xml, parser)
    except etree.XMLSyntaxError as err:
        raise UrdfError(f'robot description is not valid XML: {err}') from None
    namespace = root.tag[:root.tag.index('}') + 1] if root.tag.startswith('{') else ''
    for elem in list(root.iter()):
        if not isinstance(elem.tag, str):                 # an entity reference left unresolved
            raise UrdfError('robot description: entity references are not accepted in URDF')
        if namespace and elem.tag.startswith(namespace):
            elem.tag = elem.tag[len(namespace):]
    if root.tag != 'robot':
        raise UrdfError(f'robot description: root element is <{root.tag}>, expected <robot>')
    for elem in list(root.iter()):
        parent = elem.getparent()
        if elem.tag.startswith('{') or (parent is root and elem.tag not in _ROBOT_CHILDREN) or (
                elem.tag == 'material' and parent is not None and parent.tag == 'visual'):
            parent.remove(elem)
            continue
        for key in [k for k in elem.attrib if k.startswith('{')]:
            del elem.attrib[key]
    etree.cleanup_namespaces(root)
    return root


def _check_names(root):
    """Names present and unique, before the parser keys its maps by them."""
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


#: What urdf_parser_py reports through its module-level ``on_error`` (unknown tags and
#: attributes) is collected per thread while :func:`read_robot` runs, and goes to the handler
#: found when :func:`_collect_reports` first ran otherwise.
_COLLECTING = threading.local()
_PASSED_ON = []


def _report(message):
    messages = getattr(_COLLECTING, 'messages', None)
    if messages is not None:
        messages.append(str(message))
    elif _PASSED_ON:
        _PASSED_ON[0](message)


@contextlib.contextmanager
def _collect_reports():
    from urdf_parser_py.xml_reflection import core
    if core.on_error is not _report:
        _PASSED_ON[:] = [core.on_error]
        core.on_error = _report
    _COLLECTING.messages = messages = []
    try:
        yield messages
    finally:
        _COLLECTING.messages = None


# --- from urdf_parser_py's objects to the model's records --------------------------------------


def robot_specs(robot, *, strict=False, fill_inertials_density=None, base_dir=None,
                mesh_search_paths=(), root_joint=None):
    """``(robot_name, links, joints, notes)`` of urdf_parser_py's ``URDF`` object ``robot``,
    every value checked (see the module docstring).

    ``notes`` lists the leniencies applied and, with ``fill_inertials_density`` [kg/m^3], the
    links moved by joints that had no ``<inertial>`` and got one from their collision (else
    visual) geometry; mesh URIs are resolved against ``base_dir`` and ``mesh_search_paths``
    (with a ``root_joint`` every link counts as moved). Raises :class:`UrdfError` for anything
    that is not a well-formed, numerically valid description.
    """
    links_in, joints_in = _members(robot, 'links'), _members(robot, 'joints')
    names = {'link': set(), 'joint': set()}
    for kind, items in (('link', links_in), ('joint', joints_in)):
        for item in items:
            name = getattr(item, 'name', None)
            if not isinstance(name, str) or not name:
                raise UrdfError(f'a {kind} has no name')
            if name in names[kind]:
                raise UrdfError(f'duplicate {kind} name {name!r}')
            names[kind].add(name)
    if not links_in:
        raise UrdfError('the robot has no link')
    notes = []
    links = [LinkSpec(link.name, _inertial(link, notes)) for link in links_in]
    joints = [_joint_spec(joint, notes) for joint in joints_in]
    joints = _drop_unknown_mimics(joints, strict, notes)
    if fill_inertials_density is not None:
        links, filled = _fill_inertials(robot, links, joints, fill_inertials_density, base_dir,
                                        mesh_search_paths, root_joint is not None)
        notes += filled
    name = getattr(robot, 'name', None)
    return name if isinstance(name, str) else '', links, joints, notes


def _members(robot, attr):
    items = getattr(robot, attr, None)
    if not isinstance(items, (list, tuple)):
        raise UrdfError(f'robot description: expected a urdf_parser_py URDF object with a list '
                        f'of {attr}, got {type(robot).__name__}')
    return items


def _numbers(value, count, where, default=None, kind='limit'):
    """``value`` as ``count`` floats (a list; one number unwrapped), or ``default`` when it is
    None; each finite and of magnitude at most ``BOUNDS[kind]`` (:func:`as_finite_array`).
    """
    if value is None:
        if default is None:
            raise UrdfError(f'{where}: missing')
        return default
    try:
        values = as_finite_array(value, where, BOUNDS[kind])
    except DynamicsError as err:
        raise UrdfError(str(err)) from None
    if values.ndim > 1 or values.size != count:
        raise UrdfError(f'{where}: expected {count} number(s), got {value!r:.200}')
    values = values.ravel().tolist()
    return values[0] if count == 1 else values


def _pose(origin, where):
    """``T`` (4, 4) of a urdf_parser_py ``Pose`` (identity for None)."""
    T = np.eye(4)
    if origin is not None:
        rpy = _numbers(getattr(origin, 'rpy', None), 3, f'{where} <origin rpy>',
                       default=[0.0] * 3, kind='angle')
        if any(rpy):
            T[:3, :3] = matrix_from_rpy(rpy)
        T[:3, 3] = _numbers(getattr(origin, 'xyz', None), 3, f'{where} <origin xyz>',
                            default=[0.0] * 3, kind='length')
    return T


def _inertial(link, notes):
    inertial = getattr(link, 'inertial', None)
    if inertial is None:
        return None
    where = f'link {link.name!r} <inertial>'
    T = _pose(getattr(inertial, 'origin', None), where)
    m = _numbers(getattr(inertial, 'mass', None), 1, f'{where} <mass>', kind='mass')
    inertia = getattr(inertial, 'inertia', None)
    if inertia is None:
        notes.append(f'link {link.name!r}: <inertial> without <inertia>, taken as a point mass')
        I_bar = np.zeros((3, 3))
    else:
        xx, xy, xz, yy, yz, zz = (
            _numbers(getattr(inertia, key, None), 1, f'{where} <inertia {key}>', kind='inertia')
            for key in ('ixx', 'ixy', 'ixz', 'iyy', 'iyz', 'izz'))
        I_bar = np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]])
    R = T[:3, :3]
    return Inertial(mass=m, com=T[:3, 3].copy(), inertia=R @ I_bar @ R.T)


def _joint_spec(joint, notes):
    name = joint.name
    where = f'joint {name!r}'
    jtype = getattr(joint, 'type', None)
    if jtype not in JOINT_TYPES:
        raise UrdfError(f'{where}: unsupported type {jtype!r}; supported types: '
                        f'{", ".join(JOINT_TYPES)}')
    links = {}
    for role in ('parent', 'child'):
        links[role] = getattr(joint, role, None)
        if not isinstance(links[role], str) or not links[role]:
            raise UrdfError(f'{where}: missing <{role} link="...">')
    origin = _pose(getattr(joint, 'origin', None), where)
    axis_given = getattr(joint, 'axis', None)
    axis = np.array(_numbers(axis_given, 3, f'{where} <axis xyz>', default=[1.0, 0.0, 0.0],
                             kind='axis'))
    norm = np.linalg.norm(axis)
    if jtype in ONE_DOF_TYPES and norm > 0:
        axis = axis / norm
    if jtype == 'planar' and axis_given is not None and not (
            norm > 0 and np.allclose(axis / norm, [0.0, 0.0, 1.0])):
        notes.append(f'{where}: planar joint moves in its frame\'s x-y plane (as in Pinocchio); '
                     f'<axis xyz="{" ".join(f"{v:g}" for v in axis)}"> ignored')
    if jtype in ('floating', 'planar'):
        axis = np.array([0.0, 0.0, 1.0])
    limit = getattr(joint, 'limit', None)
    if jtype in ('revolute', 'prismatic') and limit is None:
        raise UrdfError(f'{where}: a {jtype} joint needs a <limit> element')
    lower, upper, velocity, effort = -np.inf, np.inf, np.inf, np.inf
    if limit is not None and jtype in ONE_DOF_TYPES:
        velocity = _numbers(getattr(limit, 'velocity', None), 1, f'{where} <limit velocity>')
        effort = _numbers(getattr(limit, 'effort', None), 1, f'{where} <limit effort>')
        if jtype != 'continuous':
            lower = _numbers(getattr(limit, 'lower', None), 1, f'{where} <limit lower>',
                             default=0.0)
            upper = _numbers(getattr(limit, 'upper', None), 1, f'{where} <limit upper>',
                             default=0.0)
    damping = friction = 0.0
    dynamics = getattr(joint, 'dynamics', None)
    if dynamics is not None:
        damping = _numbers(getattr(dynamics, 'damping', None), 1, f'{where} <dynamics damping>',
                           default=0.0, kind='dynamics')
        friction = _numbers(getattr(dynamics, 'friction', None), 1,
                            f'{where} <dynamics friction>', default=0.0, kind='dynamics')
    mimic = None
    mimic_given = getattr(joint, 'mimic', None)
    if mimic_given is not None:
        leader = getattr(mimic_given, 'joint', None)
        if not isinstance(leader, str) or not leader:
            raise UrdfError(f'{where}: <mimic> is missing attribute \'joint\'')
        mimic = MimicSpec(joint=leader,
                          multiplier=_numbers(getattr(mimic_given, 'multiplier', None), 1,
                                              f'{where} <mimic multiplier>', default=1.0,
                                              kind='mimic'),
                          offset=_numbers(getattr(mimic_given, 'offset', None), 1,
                                          f'{where} <mimic offset>', default=0.0, kind='mimic'))
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


def _fill_inertials(robot, links, joints, density, base_dir, search_paths, base_moves):
    from .meshes import geometry_mass_properties, link_geometry
    moved = {link.name for link in links} if base_moves else moved_links(joints)
    missing = [link.name for link in links if link.inertial is None and link.name in moved]
    if not missing:
        return links, []
    geometry = link_geometry(robot, 'collision')
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
