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
from .engine.meshes import geometry_mass_properties, parse_link_geometry
from .engine.tree import INERTIA_ABS_TOL, INERTIA_REL_TOL, inertia_problems
from .engine.urdf import parse_urdf, read_urdf_file


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
    """Child link of each moving joint -> mass of the body it starts (fixed children merged)."""
    mass = {link.name: link.inertial.mass if link.inertial is not None else 0.0
            for link in links}
    fixed_children = {}
    for j in joints:
        if j.type == 'fixed':
            fixed_children.setdefault(j.parent, []).append(j.child)

    def body(link):
        return mass.get(link, 0.0) + sum(body(c) for c in fixed_children.get(link, []))

    return {j.child: body(j.child) for j in joints if j.type != 'fixed'}


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
    xml = read_urdf_file(path)
    _, links, joints, _ = parse_urdf(xml)
    geometry = parse_link_geometry(ET.fromstring(xml), kind)
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
    """Entry point of ``ros-dynamics-inertia``; exit code 1 when problems were found."""
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
    try:
        rows = analyse(args.urdf, args.geometry, args.density, args.package_path,
                       progress=lambda d, t: _progress(d, t, sys.stderr) if t > 10 else None)
    except DynamicsError as err:
        sys.stderr.write(f'ros-dynamics-inertia: {err}\n')
        return 2
    problems = report(rows, sys.stdout)
    if args.write:
        changed = write_corrected(args.urdf, rows, args.write, args.fix)
        sys.stdout.write(f'wrote {args.write}: inertials of {len(changed)} link(s) replaced '
                         f'{changed}\n')
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main())
