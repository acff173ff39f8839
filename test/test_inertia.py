"""Mass properties of meshes and primitives; URDF inertia checks; the inertia CLI."""
import glob
import os

import numpy as np
import pytest
from robots import erd, example_robot_data_dir
import trimesh

from ros_dynamics import inertia_tool
from ros_dynamics.engine import (
    InvalidInputError,
    MeshError,
    RobotModel,
    mass_properties,
    mesh_mass_properties,
)
from ros_dynamics.engine.inertia import box_properties, cylinder_properties, sphere_properties
from ros_dynamics.engine.meshes import resolve_uri
from ros_dynamics.engine.rotations import exp_so3, matrix_from_rpy

SHARE = os.path.dirname(example_robot_data_dir())      # holds the example-robot-data folder


def box_mesh(x, y, z):
    m = trimesh.creation.box(extents=(x, y, z))
    return np.asarray(m.vertices), np.asarray(m.faces)


def test_box_is_exact_and_defaults_to_water_density():
    V, F = box_mesh(0.3, 0.2, 0.1)
    mp = mass_properties(V, F)
    assert mp.volume == pytest.approx(0.006, rel=1e-12)
    assert mp.mass == pytest.approx(6.0, rel=1e-12) and mp.density == pytest.approx(1000.0)
    expected = box_properties((0.3, 0.2, 0.1), density=1000.0)
    np.testing.assert_allclose(mp.inertia_com, expected.inertia_com, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(np.diag(expected.inertia_com),
                               6.0 / 12 * np.array([0.05, 0.1, 0.13]), rtol=1e-12)
    np.testing.assert_allclose(mp.com, 0, atol=1e-15)
    scaled = mass_properties(V, F, mass=2.0)
    np.testing.assert_allclose(scaled.inertia_com, mp.inertia_com / 3.0, rtol=1e-12)
    with pytest.raises(InvalidInputError, match='density or mass, not both'):
        mass_properties(V, F, density=1.0, mass=1.0)


def test_tetrahedron_is_exact():
    # Unit right tetrahedron (0, e1, e2, e3): V = 1/6, com = 1/4 (1, 1, 1), density 1.
    V = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1.0]])
    F = np.array([[0, 2, 1], [0, 1, 3], [0, 3, 2], [1, 2, 3]])
    mp = mass_properties(V, F, density=1.0)
    assert mp.volume == pytest.approx(1 / 6, rel=1e-14)
    np.testing.assert_allclose(mp.com, [0.25] * 3, rtol=1e-14)
    # About the origin: int y^2 + z^2 dV = 2 / 60, products int x y dV = 1 / 120.
    expected = np.array([[1 / 30, -1 / 120, -1 / 120], [-1 / 120, 1 / 30, -1 / 120],
                         [-1 / 120, -1 / 120, 1 / 30]])
    np.testing.assert_allclose(mp.inertia_origin, expected, rtol=1e-13)


def test_cylinder_and_sphere_converge_with_resolution():
    r, h = 0.05, 0.3
    exact = cylinder_properties(r, h, density=1000.0).inertia_com
    errors = []
    for sections in (16, 64, 256):
        m = trimesh.creation.cylinder(radius=r, height=h, sections=sections)
        errors.append(np.abs(mass_properties(m.vertices, m.faces).inertia_com - exact).max()
                      / np.abs(exact).max())
    assert errors[0] > errors[1] > errors[2] and errors[2] < 1e-3
    exact = sphere_properties(0.1, density=1000.0)
    errors = []
    for level in (2, 3, 4):
        m = trimesh.creation.icosphere(subdivisions=level, radius=0.1)
        errors.append(abs(mass_properties(m.vertices, m.faces).principal_moments[0]
                          - exact.principal_moments[0]) / exact.principal_moments[0])
    assert errors[0] > errors[1] > errors[2] and errors[2] < 5e-3


def test_moved_mesh_gives_the_transformed_inertia_and_origin_does_not_matter():
    V, F = box_mesh(0.4, 0.1, 0.05)
    base = mass_properties(V, F)
    rng = np.random.default_rng(3)
    for _ in range(5):
        R, t = exp_so3(rng.normal(size=3)), rng.normal(size=3) * 10
        moved = mass_properties(V @ R.T + t, F)
        np.testing.assert_allclose(moved.com, R @ base.com + t, atol=1e-9)
        np.testing.assert_allclose(moved.inertia_com, R @ base.inertia_com @ R.T, rtol=1e-8,
                                   atol=1e-12)
        np.testing.assert_allclose(moved.principal_moments, base.principal_moments, rtol=1e-8)
        np.testing.assert_allclose(moved.inertia_about(t), moved.inertia_com +
                                   base.mass * ((R @ base.com) @ (R @ base.com) * np.eye(3) -
                                                np.outer(R @ base.com, R @ base.com)),
                                   rtol=1e-8, atol=1e-12)


def test_principal_axes_as_urdf_rpy():
    V, F = box_mesh(0.5, 0.2, 0.1)
    R = matrix_from_rpy([0.3, -0.4, 1.1])
    mp = mass_properties(V @ R.T, F)
    rebuilt = matrix_from_rpy(mp.principal_rpy)
    np.testing.assert_allclose(rebuilt, mp.principal_axes, atol=1e-12)
    np.testing.assert_allclose(rebuilt @ np.diag(mp.principal_moments) @ rebuilt.T,
                               mp.inertia_com, atol=1e-12)
    assert mp.principal_moments[0] <= mp.principal_moments[1] <= mp.principal_moments[2]


def test_open_and_inside_out_meshes_are_reported():
    V, F = box_mesh(0.1, 0.1, 0.1)
    with pytest.raises(MeshError, match='not closed'):
        mass_properties(V, F[1:])
    with pytest.raises(MeshError, match='inside-out'):
        mass_properties(V, F[:, ::-1])
    flipped = F.copy()
    flipped[0] = flipped[0, ::-1]
    with pytest.raises(MeshError, match='inconsistent orientation'):
        mass_properties(V, flipped)


def _sampled_meshes(step=12):
    root = example_robot_data_dir()
    files = sorted(p for p in glob.glob(os.path.join(root, '**', '*.*'), recursive=True)
                   if p.lower().endswith(('.stl', '.dae', '.obj')))
    return files[::step]


@pytest.mark.parametrize('path', _sampled_meshes(), ids=lambda p: os.path.basename(p))
def test_real_meshes_agree_with_trimesh(path):
    reference = trimesh.load(path, force='mesh')
    closed = reference.is_watertight and reference.is_winding_consistent and reference.volume > 0
    if not closed:
        with pytest.raises(MeshError):
            mesh_mass_properties(path)
        return
    mp = mesh_mass_properties(path)
    reference.density = 1000.0
    assert mp.mass == pytest.approx(reference.mass, rel=1e-9)
    np.testing.assert_allclose(mp.com, reference.center_mass, rtol=1e-9,
                               atol=1e-9 * np.abs(reference.bounds).max())
    np.testing.assert_allclose(mp.inertia_com, reference.moment_inertia, rtol=0,
                               atol=1e-9 * np.abs(reference.moment_inertia).max())


def test_uri_resolution_and_scale():
    uri = 'package://example-robot-data/robots/panda_description/meshes/collision/link0.stl'
    path = resolve_uri(uri, search_paths=[SHARE])
    assert os.path.isfile(path)
    assert resolve_uri('file://' + path) == path
    with pytest.raises(MeshError, match='cannot find mesh'):
        resolve_uri('package://nope/mesh.stl', search_paths=[SHARE])
    one = mesh_mass_properties(uri, search_paths=[SHARE])
    two = mesh_mass_properties(uri, scale=(2, 2, 2), search_paths=[SHARE])
    assert two.volume == pytest.approx(8 * one.volume, rel=1e-12)
    mirrored = mesh_mass_properties(uri, scale=(-1, 1, 1), search_paths=[SHARE])
    assert mirrored.volume == pytest.approx(one.volume, rel=1e-12)


def test_filling_missing_inertials_from_geometry(tmp_path):
    urdf = tmp_path / 'arm.urdf'
    urdf.write_text('''<robot name="arm"><link name="base"/>
      <link name="bar"><collision><origin xyz="0 0 0.2"/>
        <geometry><box size="0.1 0.1 0.4"/></geometry></collision></link>
      <joint name="j" type="revolute"><parent link="base"/><child link="bar"/>
        <axis xyz="1 0 0"/><limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
    </robot>''')
    with pytest.warns(UserWarning, match='no mass'):
        plain = RobotModel.from_urdf_file(urdf)
    assert plain.total_mass == 0
    filled = RobotModel.from_urdf_file(urdf, fill_inertials_density=500.0)
    assert filled.total_mass == pytest.approx(0.1 * 0.1 * 0.4 * 500)
    assert any("filled the missing inertial of link 'bar'" in w for w in filled.warnings)
    # g(q) = dV/dq of a bar standing up along z, tipping about x: -m g (l/2) sin(q)
    q = np.array([0.3])
    tau = filled.gravity_torques(q)
    assert tau[0] == pytest.approx(-2.0 * 9.81 * 0.2 * np.sin(0.3), rel=1e-12)


def test_cli_flags_impossible_inertials_and_tells_them_from_frames_and_noise(capsys, tmp_path):
    code = inertia_tool.main([erd('romeo_description/urdf/romeo_laas_small.urdf'),
                              '--package-path', SHARE])
    out = capsys.readouterr().out
    assert code == 1
    assert 'body ' in out and 'IMPOSSIBLE: inertia is not positive semi-definite' in out
    assert 'violate the triangle inequality' in out
    code = inertia_tool.main([erd('icub_description/robots/icub.urdf'), '--package-path', SHARE])
    out = capsys.readouterr().out
    assert 'rounding noise' in out and 'IMPOSSIBLE' not in out
    code = inertia_tool.main([erd('panda_description/urdf/panda.urdf'), '--package-path', SHARE,
                              '--write', str(tmp_path / 'panda.urdf'), '--fix', 'all'])
    out = capsys.readouterr().out
    assert code == 0 and 'frame (massless)' in out and '0 link(s) with problems' in out
    fixed = RobotModel.from_urdf_file(tmp_path / 'panda.urdf')
    original = RobotModel.from_urdf_file(erd('panda_description/urdf/panda.urdf'))
    assert fixed.total_mass == pytest.approx(original.total_mass)
    assert 'panda_link1' in out


def test_cli_rewrites_flagged_links_only(tmp_path, capsys):
    path = erd('allegro_hand_description/urdf/allegro_right_hand.urdf')
    out_path = tmp_path / 'allegro.urdf'
    code = inertia_tool.main([path, '--package-path', SHARE, '--write', str(out_path)])
    out = capsys.readouterr().out
    assert code == 1 and "link_3.0" in out
    # The rewritten links are physically possible now: strict loading accepts the robot.
    corrected = RobotModel.from_urdf_file(out_path, strict=True)
    assert corrected.nq == 16


ARM_WITH = '''<robot name="r"><link name="a"/>
  <link name="b"><inertial><mass value="1"/><inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01"
    iyz="0" izz="0.01"/></inertial><collision><geometry>{geometry}</geometry></collision></link>
  <joint name="j" type="revolute"><parent link="a"/><child link="b"/>
    <limit lower="-1" upper="1" effort="1" velocity="1"/></joint></robot>'''


@pytest.mark.parametrize('geometry, message', [
    ('<mesh filename="package://pkg/m.stl" scale="1e200 1 1"/>', 'magnitude <= 1e+06'),
    ('<sphere radius="nan"/>', 'magnitude <= 1e+06'),
    ('<cylinder radius="0.1"/>', 'geometry: Required attribute not set in XML: length'),
    ('<box size="0.1 0.1"/>', 'geometry[@size]: Invalid vector length'),
])
def test_cli_refuses_unusable_geometry_in_one_line_with_exit_2(tmp_path, capsys, geometry,
                                                               message):
    path = tmp_path / 'r.urdf'
    path.write_text(ARM_WITH.format(geometry=geometry))
    assert inertia_tool.main([str(path)]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count('\n') == 1 and 'Traceback' not in err


def test_cli_errors_are_one_line_and_exit_2(tmp_path, capsys):
    assert inertia_tool.main([str(tmp_path / 'missing.urdf')]) == 2
    assert 'cannot read URDF file' in capsys.readouterr().err
    (tmp_path / 'bad.urdf').write_text('<robot name="r"><link name="a"></robot>')
    assert inertia_tool.main([str(tmp_path / 'bad.urdf')]) == 2
    assert 'not valid XML' in capsys.readouterr().err


def test_package_paths_that_leave_their_package_are_refused(tmp_path, capsys):
    (tmp_path / 'outside').mkdir()
    (tmp_path / 'pkg').mkdir()
    for uri in ('package://pkg/../outside/m.stl', 'package://pkg/../../etc/passwd',
                'package://../outside/m.stl', 'package://pkg//etc/passwd'):
        with pytest.raises(MeshError, match='must stay inside its package'):
            resolve_uri(uri, search_paths=[str(tmp_path)])
    path = tmp_path / 'r.urdf'
    path.write_text(ARM_WITH.format(geometry='<mesh filename="package://pkg/../outside/m.stl"/>'))
    inertia_tool.main([str(path), '--package-path', str(tmp_path)])
    assert "link 'b': geometry not used: mesh 'package://pkg/../outside/m.stl': a package:// " \
        'path must stay inside its package' in capsys.readouterr().out


def test_cli_handles_a_10000_link_fixed_chain(tmp_path, capsys):
    n = 10000
    links = ''.join(f'<link name="l{i}"><inertial><mass value="1"/><inertia ixx="1" ixy="0" '
                    'ixz="0" iyy="1" iyz="0" izz="1"/></inertial></link>' for i in range(n))
    joints = ''.join(f'<joint name="j{i}" type="fixed"><parent link="l{i}"/><child '
                     f'link="l{i + 1}"/></joint>' for i in range(n - 1))
    path = tmp_path / 'deep.urdf'
    path.write_text(f'<robot name="deep">{links}{joints}</robot>')
    assert inertia_tool.main([str(path)]) == 0
    assert f'0 link(s) with problems out of {n}' in capsys.readouterr().out
    model = RobotModel.from_urdf_file(path, fill_inertials_density=1000.0)
    assert model.nq == 0 and len(model.frame_names) == n
