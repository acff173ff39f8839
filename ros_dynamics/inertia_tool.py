"""ros-dynamics-inertia: check a URDF's inertials against its geometry; write a corrected URDF.

For every link it prints the declared mass properties, those of its collision (or visual)
geometry, and what is wrong: physically impossible inertials (not positive definite, triangle
inequality, mass zero with inertia), links moved by joints without mass, a center of mass
outside the geometry -- and it tells those apart from massless frame links and rounding noise.
``--write out.urdf`` replaces the inertials of the flagged links (``--fix all``: every link with
geometry) by the geometry's, with the declared mass (else ``--density``).

    ros-dynamics-inertia robot.urdf [--geometry collision|visual] [--density 1000]
                         [--package-path DIR ...] [--write corrected.urdf] [--fix flagged|all]
"""
import argparse
import os
import sys
import xml.etree.ElementTree as ET

import numpy as np

from .engine.exceptions import DynamicsError
from .engine.inertia import DEFAULT_DENSITY
from .engine.meshes import geometry_mass_properties, link_geometry
from .engine.tree import INERTIA_ABS_TOL, INERTIA_REL_TOL, inertia_problems
from .engine.urdf import read_robot, read_urdf_file, robot_specs


def classify(name, inertial, body_mass):
    """(status, is_problem) of a link's declared inertial.

    ``body_mass``: for the child link of a moving joint, the mass of the body that joint moves
    (the link and everything fixed to it); None for other links.
    """
    if inertial is not None:
        problems = inertia_problems(name, inertial)
        if problems:
            return ('IMPOSSIBLE: ' + '; '.join(p.split(': ', 1)[1] for p in problems), True)
    if body_mass is not None and body_mass <= 0:
        return 'no mass on a body moved by a joint (the mass matrix loses rank)', True
    if inertial is None or inertial.mass == 0:
        return 'frame (massless)', False
    moments = np.linalg.eigvalsh(inertial.inertia)
    if moments[0] < 0 or moments[0] + moments[1] < moments[2]:
        return (f'ok (rounding noise, within {INERTIA_REL_TOL:g} relative + '
                f'{INERTIA_ABS_TOL:g} kg m^2)', False)
    return 'ok', False


def moving_body_masses(links, joints):
    """Child link of each moving joint -> mass of the body it starts (fixed children merged).

    Bodies are summed from the leaves up without recursion, so chains of any depth work.
    """
    body = {link.name: link.inertial.mass if link.inertial is not None else 0.0
            for link in links}
    parent_of = {j.child: j.parent for j in joints if j.type == 'fixed'}
    children = {}
    for child, parent in parent_of.items():
        children.setdefault(parent, []).append(child)
    order, stack = [], [name for name in body if name not in parent_of]
    while stack:                               # every link below its fixed parent in `order`
        link = stack.pop()
        order.append(link)
        stack.extend(children.get(link, ()))
    for link in reversed(order):               # leaves first: each adds itself to its parent
        if link in parent_of and parent_of[link] in body:
            body[parent_of[link]] += body[link]
    return {j.child: body.get(j.child, 0.0) for j in joints if j.type != 'fixed'}


def _progress(done, total, out):
    width = 30
    filled = int(width * done / max(total, 1))
    out.write(f'\r[{"#" * filled}{"." * (width - filled)}] {done}/{total} links with geometry')
    out.flush()
    if done == total:
        out.write('\n')


def analyse(path, kind='collision', density=None, search_paths=(), progress=None):
    """Per link: (name, declared Inertial or None, geometry MassProperties or error text,
    status, is_problem).
    """
    robot, _ = read_robot(read_urdf_file(path))
    _, links, joints, _ = robot_specs(robot)
    geometry = link_geometry(robot, kind)
    bodies = moving_body_masses(links, joints)
    base_dir = os.path.dirname(os.path.abspath(path))
    rows = []
    with_geometry = [link for link in links if link.name in geometry]
    for link in links:
        status, problem = classify(link.name, link.inertial, bodies.get(link.name))
        derived = None
        if link.name in geometry:
            declared_mass = link.inertial.mass if link.inertial is not None else 0.0
            try:
                derived = geometry_mass_properties(
                    geometry[link.name], mass=declared_mass if declared_mass > 0 else None,
                    density=None if declared_mass > 0 else (density or DEFAULT_DENSITY),
                    search_paths=search_paths, base_dir=base_dir)
            except DynamicsError as err:
                derived = str(err)
            if progress is not None:
                progress(with_geometry.index(link) + 1, len(with_geometry))
            if link.inertial is not None and link.inertial.mass > 0 and \
                    not isinstance(derived, str) and not _inside(link.inertial.com, derived):
                status += '; center of mass outside the geometry (warning)'
        rows.append((link.name, link.inertial, derived, status, problem))
    return rows


def _inside(com, derived):
    """Whether the declared center of mass lies within the geometry's extent.

    The extent is a sphere about the geometry's center of mass whose radius is that of a solid
    sphere with the geometry's largest principal moment (+10 %): a coarse test for a warning.
    """
    radius = np.sqrt(np.max(np.linalg.eigvalsh(derived.inertia_com)) * 2.5 / derived.mass)
    return np.linalg.norm(np.asarray(com) - derived.com) <= 1.1 * radius + 1e-6


def _fmt(values):
    return '[' + ' '.join(f'{v:.4g}' for v in values) + ']'


def report(rows, out):
    """Print the per-link table and a summary; returns the number of problems."""
    out.write(f'{"link":32s} {"declared mass":>13s} {"declared moments":34s} '
              f'{"geometry mass":>13s} {"geometry moments":34s} status\n')
    problems = 0
    for name, declared, derived, status, problem in rows:
        d_mass = f'{declared.mass:.4g}' if declared is not None else '-'
        d_mom = _fmt(np.linalg.eigvalsh(declared.inertia)) if declared is not None else '-'
        if derived is None:
            g_mass, g_mom = '-', '-'
        elif isinstance(derived, str):
            g_mass, g_mom = 'n/a', derived[:34]
        else:
            g_mass, g_mom = f'{derived.mass:.4g}', _fmt(derived.principal_moments)
        out.write(f'{name:32s} {d_mass:>13s} {d_mom:34s} {g_mass:>13s} {g_mom:34s} {status}\n')
        problems += problem
    for name, _, derived, _, _ in rows:
        if isinstance(derived, str):
            out.write(f'link {name!r}: geometry not used: {derived}\n')
    out.write(f'{problems} link(s) with problems out of {len(rows)}\n')
    return problems


def write_corrected(path, rows, out_path, fix='flagged'):
    """Copy of the URDF with the inertials of the chosen links replaced by the geometry's."""
    tree = ET.parse(path)
    by_name = {row[0]: row for row in rows}
    changed = []
    for link in tree.getroot().findall('link'):
        name, _, derived, _, problem = by_name[link.get('name')]
        if derived is None or isinstance(derived, str) or (fix == 'flagged' and not problem):
            continue
        old = link.find('inertial')
        if old is not None:
            link.remove(old)
        inertial = ET.SubElement(link, 'inertial')
        ET.SubElement(inertial, 'origin', xyz=' '.join(f'{v:.9g}' for v in derived.com),
                      rpy=' '.join(f'{v:.9g}' for v in derived.principal_rpy))
        ET.SubElement(inertial, 'mass', value=f'{derived.mass:.9g}')
        ixx, iyy, izz = derived.principal_moments
        ET.SubElement(inertial, 'inertia', ixx=f'{ixx:.9g}', ixy='0', ixz='0', iyy=f'{iyy:.9g}',
                      iyz='0', izz=f'{izz:.9g}')
        changed.append(name)
    tree.write(out_path, encoding='unicode', xml_declaration=True)
    return changed


def main(argv=None):
    """Entry point of ``ros-dynamics-inertia``: exit code 0 when every inertial is plausible,
    1 when problems were found, 2 for an error (one line on stderr: the file cannot be read or
    is not a valid description, a mesh is missing, ...).
    """
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('urdf')
    parser.add_argument('--geometry', choices=('collision', 'visual'), default='collision')
    parser.add_argument('--density', type=float, default=None,
                        help=f'[kg/m^3] for links without declared mass (default '
                             f'{DEFAULT_DENSITY:g})')
    parser.add_argument('--package-path', action='append', default=[],
                        help='folder holding packages named by package:// URIs (repeatable)')
    parser.add_argument('--write', metavar='OUT_URDF', help='write a corrected URDF')
    parser.add_argument('--fix', choices=('flagged', 'all'), default='flagged')
    args = parser.parse_args(argv)
    if args.density is not None and not 0 < args.density <= 1e6:
        parser.error(f'--density: expected a value in (0, 1e6] kg/m^3, got {args.density:g}')
    try:
        rows = analyse(args.urdf, args.geometry, args.density, args.package_path,
                       progress=lambda d, t: _progress(d, t, sys.stderr) if t > 10 else None)
        problems = report(rows, sys.stdout)
        if args.write:
            changed = write_corrected(args.urdf, rows, args.write, args.fix)
            sys.stdout.write(f'wrote {args.write}: inertials of {len(changed)} link(s) replaced '
                             f'{changed}\n')
    except (DynamicsError, OSError, ET.ParseError) as err:
        return _fail(err)
    except Exception as err:  # noqa: BLE001 -- a CLI reports any failure in one line, exit 2
        return _fail(f'internal error ({type(err).__name__}): {err}')
    return 1 if problems else 0


def _fail(message):
    text = ' '.join(str(message).split())
    sys.stderr.write(f'ros-dynamics-inertia: {text[:1000]}\n')
    return 2


if __name__ == '__main__':
    sys.exit(main())
