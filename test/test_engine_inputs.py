"""Hostile inputs to every public engine entry point: only typed errors (DynamicsError), and
no NaN, Inf or overflow from what is accepted.
"""
import datetime

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
import numpy as np
import pytest
from robots import DEMO_ARM, SOLO12, TREE_URDF, erd, load

from ros_dynamics.engine import DynamicsError, IKSolver, Payload, RobotModel

MODELS = {'demo': load(DEMO_ARM), 'tree': RobotModel.from_urdf_string(TREE_URDF),
          'solo12 floating': RobotModel.from_urdf_file(erd(SOLO12), root_joint='floating')}


def _bad_values(n):
    """Inputs standing where an array of n joint values is expected."""
    return st.one_of(
        st.just(np.full(n, np.nan)), st.just(np.full(n, np.inf)), st.just(np.full(n, 1e300)),
        st.just(np.zeros(n, dtype=complex) + 1j), st.just(np.array(['a'] * n)),
        st.just(np.array([datetime.datetime(2020, 1, 1)] * n)),
        st.just(np.array(['2020-01-01'] * n, dtype='datetime64[D]')),
        st.just([[0.0] * n, [0.0] * (n + 1)]), st.just('0' * n), st.just(None), st.just({}),
        st.just([object()] * n), st.just(10 ** 400), st.just([10 ** 400] * n),
        st.just(np.zeros((2, 3, n + 1))), st.just(np.float64(np.nan)), st.just(True),
        st.lists(st.floats(allow_nan=True, allow_infinity=True), min_size=n, max_size=n),
        st.lists(st.floats(allow_nan=False, allow_infinity=False), min_size=0, max_size=2 * n),
    )


def _calls(model, x, good, v):
    """Every public entry point with ``x`` in one argument slot, good values in the others:
    ``good`` a configuration (nq,), ``v`` a velocity (nv,).
    """
    frame = model.leaf_frames[-1]
    return [
        lambda: model.frame_pose(x, frame), lambda: model.frame_poses(x),
        lambda: model.jacobian(x, frame), lambda: model.jacobian(good, frame, point=x),
        lambda: model.jacobian_time_derivative(good, x, frame),
        lambda: model.frame_twist(good, x, frame),
        lambda: model.frame_acceleration(good, v, x, frame),
        lambda: model.inverse_dynamics(x, v, v),
        lambda: model.inverse_dynamics(good, x, v),
        lambda: model.inverse_dynamics(good, v, x),
        lambda: model.inverse_dynamics(good, v, v, {frame: x}),
        lambda: model.inverse_dynamics(np.stack([good] * 40), np.stack([v] * 40), x),
        lambda: model.gravity_torques(x), lambda: model.bias_torques(good, x),
        lambda: model.coriolis_matrix(x, v), lambda: model.mass_matrix(x),
        lambda: model.forward_dynamics(good, v, x),
        lambda: model.forward_dynamics(good, x, v),
        lambda: model.kinetic_energy(good, x), lambda: model.potential_energy(x),
        lambda: model.center_of_mass(x), lambda: model.center_of_mass_jacobian(x),
        lambda: model.wrench_torques(good, frame, x),
        lambda: model.wrench_torques(x, frame, np.ones(6)),
        lambda: model.q_from_names(model.joint_names, x),
        lambda: model.integrate(good, x, 0.1), lambda: model.difference(good, x),
        lambda: model.make_settings(gravity=x), lambda: model.make_settings(rotor_inertia=x),
        lambda: model.make_settings(payloads=[Payload(frame, 1.0, com=x)]),
        lambda: model.make_settings(payloads=[Payload(frame, x)]),
        lambda: IKSolver(model).solve(frame, np.eye(4), x, timeout=0.002),
        lambda: IKSolver(model).solve(frame, x, timeout=0.002),
        lambda: IKSolver(model).solve(frame, np.eye(4), timeout=x),
        lambda: IKSolver(model).solve(frame, np.eye(4), position_tolerance=x, timeout=0.002),
        lambda: IKSolver(model).solve(frame, np.eye(4), weights=x, timeout=0.002),
        lambda: IKSolver(model).prepare(frame, samples=x),
    ]


@pytest.mark.parametrize('name', sorted(MODELS))
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_hostile_values_raise_typed_errors_or_give_finite_results(name, data):
    model = MODELS[name]
    good, v = model.middle_configuration(), np.zeros(model.nv)
    x = data.draw(_bad_values(model.nq))
    for call in _calls(model, x, good, v):
        with np.errstate(over='raise', invalid='raise', divide='raise'):
            try:
                out = call()
            except DynamicsError:
                continue
        for value in (out if isinstance(out, tuple) else (out,)):
            if isinstance(value, np.ndarray) and value.dtype.kind == 'f':
                assert np.all(np.isfinite(value))


@pytest.mark.parametrize('text', [
    None, b'<robot/>', 3, '<robot name="r"><link name="a"/>' + '<x>' * 10000,
    '<robot name="r"><link name="' + 'a' * 100000 + '"/></robot>',
    '<?xml version="1.0"?><!DOCTYPE r [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;">]>'
    '<robot name="&b;"><link name="a"/></robot>',
])
def test_hostile_descriptions_raise_typed_errors_or_load(text):
    try:
        RobotModel.from_urdf_string(text)
    except DynamicsError:
        pass


def test_models_without_moving_joints_answer_with_empty_results():
    model = RobotModel.from_urdf_string('<robot name="r"><link name="a"/><link name="b"/>'
                                        '<joint name="j" type="fixed"><parent link="a"/>'
                                        '<child link="b"/></joint></robot>')
    q = np.zeros(0)
    assert model.inverse_dynamics(q, q, q).shape == (0,)
    assert model.inverse_dynamics(np.zeros((5, 0)), np.zeros((5, 0)), np.zeros((5, 0))).shape \
        == (5, 0)
    assert model.gravity_torques(q).shape == (0,) and model.mass_matrix(q).shape == (0, 0)
    assert model.forward_dynamics(q, q, q).shape == (0,)
    assert model.jacobian(q, 'b').shape == (6, 0)
    np.testing.assert_allclose(model.frame_pose(q, 'b'), np.eye(4))


def test_a_moving_subtree_without_mass_is_named_by_forward_dynamics():
    model = RobotModel.from_urdf_string(
        '<robot name="r"><link name="a"/><link name="b"/><joint name="j" type="revolute">'
        '<parent link="a"/><child link="b"/><limit lower="-1" upper="1" effort="1" '
        'velocity="1"/></joint></robot>')
    q = np.zeros(1)
    with pytest.raises(DynamicsError, match=r"singular; joints that move no mass or inertia: "
                                            r"\['j'\]"):
        model.forward_dynamics(q, q, q)


def test_a_floating_base_with_massless_joints_names_them_in_a_typed_error():
    """A humanoid-like description whose joint moves no mass, on a floating base: forward
    dynamics names the coordinates that move nothing (was a bare ValueError from a reshape in
    the error path, the base's six coordinates against one root joint).
    """
    model = RobotModel.from_urdf_string(
        '<robot name="r"><link name="a"><inertial><mass value="2"/><inertia ixx="0.1" ixy="0" '
        'ixz="0" iyy="0.1" iyz="0" izz="0.1"/></inertial></link><link name="b"/>'
        '<joint name="j" type="revolute"><parent link="a"/><child link="b"/>'
        '<limit lower="-1" upper="1" effort="1" velocity="1"/></joint></robot>',
        root_joint='floating')
    q, v = model.neutral(), np.zeros(model.nv)
    with pytest.raises(DynamicsError, match=r"joints that move no mass or inertia: \['j'\]"):
        model.forward_dynamics(q, v, v)


def test_mass_properties_of_huge_vertices_and_mesh_scales_are_typed_errors(tmp_path):
    from ros_dynamics.engine import mass_properties, mesh_mass_properties
    from ros_dynamics.engine.exceptions import InvalidInputError, MeshError
    trimesh = pytest.importorskip('trimesh', reason='trimesh is part of make env')
    box = trimesh.creation.box((0.1, 0.2, 0.3))
    vertices, faces = np.asarray(box.vertices), np.asarray(box.faces)
    assert mass_properties(vertices, faces).mass > 0
    for scale in (1e200, 1e7):
        with pytest.raises(InvalidInputError, match='vertices: expected finite coordinates'):
            mass_properties(vertices * scale, faces)
    path = tmp_path / 'box.stl'
    box.export(path)
    assert mesh_mass_properties(str(path)).mass > 0
    for scale in ([1e200, 1, 1], [float('nan')] * 3, [1e7] * 3):
        with pytest.raises(MeshError, match='mesh scale'):
            mesh_mass_properties(str(path), scale=scale)


ARM = open(DEMO_ARM).read()


@pytest.mark.parametrize('old, new, element', [
    ('<mass value="', '<mass value="1e308" x="', "<mass value="),
    ('ixx="', 'ixx="1e308" y="', '<inertia ixx='),
    ('xyz="0 0 0.2125"', 'xyz="1e308 0 1e308"', '<origin xyz="1e308'),
    ('lower="', 'lower="-1e300" x="', '<limit'),
])
def test_extreme_finite_numbers_in_a_description_are_refused_naming_the_element(old, new,
                                                                                  element):
    """1e308 is finite, but a gravity torque or pose computed from it is not: every number read
    from a description is bounded where it is read (a mass of 1e6 kg, an origin of 1e6 m).
    """
    xml = ARM.replace(old, new, 1)
    assert xml != ARM
    if element == '<limit':                               # limits may say "unlimited": 1e16
        assert RobotModel.from_urdf_string(xml.replace('-1e300', '-1e16', 1)).nq == 6
        xml = ARM.replace('lower="', 'lower="-1e101" x="', 1)
    with pytest.raises(DynamicsError, match='magnitude <= ') as err:
        RobotModel.from_urdf_string(xml)
    assert element.split()[0] in str(err.value) and "'" in str(err.value)


def test_a_mimic_multiplier_of_1e308_is_refused():
    xml = ('<robot name="m"><link name="a"/><link name="b"/><link name="c"/>'
           '<joint name="j" type="revolute"><parent link="a"/><child link="b"/>'
           '<limit lower="-1" upper="1" effort="1" velocity="1"/></joint>'
           '<joint name="k" type="revolute"><parent link="b"/><child link="c"/>'
           '<mimic joint="j" multiplier="1e308"/>'
           '<limit lower="-1" upper="1" effort="1" velocity="1"/></joint></robot>')
    with pytest.raises(DynamicsError, match=r"joint 'k'.*<mimic multiplier>: expected finite "
                                            r"values of magnitude.*got 1e\+308"):
        RobotModel.from_urdf_string(xml)
    assert RobotModel.from_urdf_string(xml.replace('1e308', '-2.5')).has_mimic
