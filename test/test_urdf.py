"""Loading robot descriptions: the catalogue of bad URDFs, warnings, strict mode, DH tables."""
import os
import re
import warnings

import numpy as np
import pytest
from robots import DEMO_ARM, TREE_URDF

from ros_dynamics.engine import (
    InertiaError,
    InertiaWarning,
    ModelError,
    RobotModel,
    UnknownFrameError,
    UnknownJointError,
    UrdfError,
)

HERE = os.path.dirname(os.path.abspath(__file__))

# File in test/bad_urdf -> the message the typed error must carry (it names the element).
BAD_URDFS = {
    'invalid_xml.urdf': r'not valid XML: .*line 2',
    'empty.urdf': r'robot description is empty',
    'no_links.urdf': r'the robot has no <link>',
    'not_a_robot.urdf': r'root element is <model>, expected <robot>',
    'two_roots.urdf': r"2 root links, \['a', 'c'\]",
    'loop_no_root.urdf': r'no root link',
    'loop.urdf': r"link 'b' is the child of two joints, 'j1' and 'j3'",
    'unknown_child.urdf': r"joint 'j1': unknown child link 'ghost'",
    'unknown_parent.urdf': r"joint 'j1': unknown parent link 'ghost'",
    'duplicate_link.urdf': r"duplicate link name 'b'",
    'duplicate_joint.urdf': r"duplicate joint name 'j1'",
    'unknown_joint_type.urdf': r"joint\[@name='j1'\]: Invalid joint type: ball",
    'revolute_without_limits.urdf': r"joint 'j1': a revolute joint needs a <limit>",
    'prismatic_without_limits.urdf': r"joint 'j1': a prismatic joint needs a <limit>",
    'lower_above_upper.urdf': r"joint 'j1': position limits lower=1.0 > upper=-1.0",
    'limit_without_effort.urdf': r"joint\[@name='j1'\]/limit: Required attribute not set in "
                                 r"XML: effort",
    'negative_mass.urdf': r"link 'b': negative mass -2.0",
    'nan_origin.urdf': r"joint 'j1' <origin xyz>: expected finite .*got \[0.0, nan, 0.0\]",
    'nan_inertia.urdf': r"link 'b' <inertial> <inertia ixx>: expected finite values.*got nan",
    'unparsable_number.urdf': r"joint\[@name='j1'\]/origin\[@xyz\]: could not convert string "
                              r"to float: '0.1abc'",
    'wrong_count.urdf': r"joint\[@name='j1'\]/origin\[@xyz\]: Invalid vector length",
    'zero_axis.urdf': r"joint 'j1': <axis> must be a finite non-zero vector",
    'mimic_cycle.urdf': r'mimic cycle: j1 -> j2 -> j1',
    'mimic_of_fixed.urdf': r"joint 'j2': <mimic> leader 'j1' is a fixed joint",
    'joint_without_parent.urdf': r"joint\[@name='j1'\]: Required element not set in XML: parent",
}

WARN_URDFS = {
    'not_positive_definite.urdf': r"link 'b': inertia is not positive semi-definite",
    'triangle_inequality.urdf': r"link 'b': principal moments .* violate the triangle inequality",
    'massless_subtree.urdf': r"joint 'j2' moves a subtree with no mass",
}


# File in test/lenient_urdf -> the note a lenient load leaves (strict mode refuses it).
LENIENT_URDFS = {
    'mimic_unknown.urdf': r"joint 'j2': <mimic> names unknown joint 'nobody'",
}


# File in test/multi_dof_urdf -> (nq, nv, joint types): floating and planar joints in the tree
# load as Pinocchio loads them (checked against it in test_floating_base.py).
MULTI_DOF_URDFS = {
    'floating_joint.urdf': (7, 6, ('floating',)),
    'planar_joint.urdf': (4, 3, ('planar',)),
}


def test_catalogue_covers_every_file():
    assert sorted(os.listdir(os.path.join(HERE, 'bad_urdf'))) == sorted(BAD_URDFS)
    assert sorted(os.listdir(os.path.join(HERE, 'multi_dof_urdf'))) == sorted(MULTI_DOF_URDFS)
    assert sorted(os.listdir(os.path.join(HERE, 'warn_urdf'))) == sorted(WARN_URDFS)
    assert sorted(os.listdir(os.path.join(HERE, 'lenient_urdf'))) == sorted(LENIENT_URDFS)


def test_a_mimic_of_an_unknown_joint_leaves_the_joint_independent_unless_strict():
    path = os.path.join(HERE, 'lenient_urdf', 'mimic_unknown.urdf')
    model = RobotModel.from_urdf_file(path)
    assert model.joint_names == ('j1', 'j2') and model.mimic_joint_names == ()
    assert any(re.search(LENIENT_URDFS['mimic_unknown.urdf'], n) for n in model.warnings)
    with pytest.raises(UrdfError, match=LENIENT_URDFS['mimic_unknown.urdf']):
        RobotModel.from_urdf_file(path, strict=True)


ARM = '''<robot name="r" {attrs}><link name="a"/>
  <link name="b"><inertial><origin xyz="0 0 0.1"/><mass value="2"/>{inertia}</inertial></link>
  <joint name="j" type="revolute" {joint_attrs}><parent link="a"/><child link="b"/>
    <axis xyz="0 1 0"/><limit lower="-1" upper="1" effort="1" velocity="1"/></joint>{extra}
</robot>'''
INERTIA = '<inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.1"/>'


def _arm(attrs='', inertia=INERTIA, joint_attrs='', extra=''):
    return ARM.format(attrs=attrs, inertia=inertia, joint_attrs=joint_attrs, extra=extra)


@pytest.mark.parametrize('text, note', [
    ('\n\n  <?xml version="1.0"?>\n' + _arm(), None),
    (_arm(attrs='xmlns="http://example.com/urdf"'), None),
    (_arm(joint_attrs='drake:acceleration="1"'), r"undeclared XML prefixes \['drake'\]"),
    (_arm(extra='<xacro:property name="x" value="1"/><xacro:if value="1"><link name="z"/>'
                '</xacro:if>'), r"undeclared XML prefixes \['xacro'\]"),
    (_arm(attrs='xmlns:drake="http://drake.mit.edu"', joint_attrs='drake:x="1"'), None),
    # Read in slices of 64 kB (a long text must not hold the interpreter): none missed.
    (_arm(extra=''.join(f'<!-- {"x" * 30_000} --><gazebo reference="b" sim{k}:x="1"/>'
                        for k in range(5))),
     r"undeclared XML prefixes \['sim0', 'sim1', 'sim2', 'sim3', 'sim4'\]"),
])
def test_what_pinocchio_accepts_loads_with_the_same_model(text, note):
    model = RobotModel.from_urdf_string(text)
    plain = RobotModel.from_urdf_string(_arm())
    assert model.frame_names == ('a', 'b') and model.joint_names == ('j',)
    q = np.array([0.3])
    np.testing.assert_allclose(model.gravity_torques(q), plain.gravity_torques(q))
    if note is None:
        assert model.warnings == ()
    else:
        assert any(re.search(note, n) for n in model.warnings), model.warnings


def test_an_inertial_without_inertia_is_a_point_mass():
    model = RobotModel.from_urdf_string(_arm(inertia=''))
    assert any("link 'b': <inertial> without <inertia>, taken as a point mass" in n
               for n in model.warnings)
    q = np.array([0.0])
    # A point mass of 2 kg at 0.1 m along z, turned about y: 2 * 9.81 * 0.1 * sin(q) = 0 at 0.
    np.testing.assert_allclose(model.mass_matrix(q), [[2 * 0.1 ** 2]])
    np.testing.assert_allclose(model.gravity_torques(np.array([np.pi / 2])), [-2 * 9.81 * 0.1],
                               atol=1e-12)


@pytest.mark.parametrize('name', sorted(BAD_URDFS))
def test_bad_urdf_raises_a_typed_error_naming_the_fault(name):
    path = os.path.join(HERE, 'bad_urdf', name)
    with pytest.raises(UrdfError, match=BAD_URDFS[name]):
        RobotModel.from_urdf_file(path)
    with open(path) as f:
        text = f.read()
    with pytest.raises(UrdfError, match=BAD_URDFS[name]):
        RobotModel.from_urdf_string(text)


@pytest.mark.parametrize('name', sorted(MULTI_DOF_URDFS))
def test_floating_and_planar_joints_in_the_tree_load(name):
    nq, nv, types = MULTI_DOF_URDFS[name]
    model = RobotModel.from_urdf_file(os.path.join(HERE, 'multi_dof_urdf', name), strict=True)
    assert (model.nq, model.nv, model.joint_types) == (nq, nv, types)
    assert model.actuated_joint_names == () and len(model.q_names) == nq
    np.testing.assert_array_equal(model.lower_limits[:2], -np.inf)   # <limit> ignored
    with_root = RobotModel.from_urdf_file(os.path.join(HERE, 'multi_dof_urdf', name),
                                          root_joint='planar')
    assert (with_root.nq, with_root.nv) == (nq + 4, nv + 3)
    assert with_root.joint_names == ('root_joint', 'j1')


def test_root_joint_is_checked():
    with pytest.raises(ModelError, match=r"root_joint: expected one of \(None, 'floating', "
                                         r"'planar'\), got 'fixed'"):
        RobotModel.from_urdf_string(TREE_URDF, root_joint='fixed')
    clash = TREE_URDF.replace('name="waist"', 'name="root_joint"')
    with pytest.raises(UrdfError, match="a joint of the description is named 'root_joint'"):
        RobotModel.from_urdf_string(clash, root_joint='floating')


def test_a_planar_axis_other_than_z_is_noted():
    xml = open(os.path.join(HERE, 'multi_dof_urdf', 'planar_joint.urdf')).read()
    model = RobotModel.from_urdf_string(xml.replace('<axis xyz="0 0 1"/>', '<axis xyz="1 0 0"/>'))
    assert any("planar joint moves in its frame's x-y plane" in n for n in model.warnings)


@pytest.mark.parametrize('name', sorted(WARN_URDFS))
def test_suspicious_inertials_warn_once_and_raise_when_strict(name):
    path = os.path.join(HERE, 'warn_urdf', name)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        model = RobotModel.from_urdf_file(path)
    relevant = [w for w in caught if issubclass(w.category, InertiaWarning)]
    assert len(relevant) == 1
    assert any(re.search(WARN_URDFS[name], note) for note in model.warnings)
    with pytest.raises(InertiaError, match=WARN_URDFS[name]):
        RobotModel.from_urdf_file(path, strict=True)


def test_massless_frame_links_and_rounding_noise_do_not_warn():
    xml = '''<robot name="ok">
      <link name="base"/>
      <link name="arm"><inertial><mass value="2"/>
        <inertia ixx="0.02" ixy="0" ixz="0" iyy="0.02" iyz="0" izz="1e-22"/></inertial></link>
      <link name="tool"/>
      <joint name="j" type="continuous"><parent link="base"/><child link="arm"/></joint>
      <joint name="t" type="fixed"><parent link="arm"/><child link="tool"/></joint>
    </robot>'''
    with warnings.catch_warnings():
        warnings.simplefilter('error')
        model = RobotModel.from_urdf_string(xml, strict=True)
    assert model.warnings == ()
    assert model.frame_names == ('base', 'arm', 'tool')


def test_missing_file_and_wrong_type():
    with pytest.raises(UrdfError, match='cannot read URDF file'):
        RobotModel.from_urdf_file('/nonexistent/robot.urdf')
    with pytest.raises(UrdfError, match='expected URDF text'):
        RobotModel.from_urdf_string(b'<robot/>')


def test_unknown_tags_and_old_transmissions_are_ignored():
    xml = '''<robot name="r"><link name="a"/><link name="b"><inertial><mass value="1"/>
      <inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/></inertial>
      <visual><geometry><mesh filename="package://nowhere/m.stl"/></geometry></visual></link>
      <joint name="j" type="revolute"><parent link="a"/><child link="b"/>
        <limit lower="-1" upper="1" effort="1" velocity="1"/><safety_controller k_velocity="1"/>
      </joint>
      <transmission name="t"><actuator name="m"/><joint name="j"/></transmission>
      <gazebo reference="a"><material>Gazebo/Grey</material></gazebo></robot>'''
    model = RobotModel.from_urdf_string(xml)
    assert model.joint_names == ('j',)


def test_demo_arm_model_contents():
    model = RobotModel.from_urdf_file(DEMO_ARM, strict=True)
    assert model.nq == 6
    assert model.root_link == 'base_link'
    assert model.joint_names[0] == 'shoulder_pan_joint'
    assert 'tool0' in model.frame_names
    np.testing.assert_allclose(model.lower_limits, -3.14159)
    np.testing.assert_allclose(model.effort_limits[:3], 150.0)
    np.testing.assert_allclose(model.joint_damping[:3], 0.5)
    np.testing.assert_allclose(model.total_mass, 21.05 - 4.0)   # the fixed base is not counted





def test_tree_order_limits_and_mimic_chain():
    model = RobotModel.from_urdf_string(TREE_URDF)
    assert model.moving_joint_names == ('waist', 'l', 's', 'r')      # depth first, file order
    assert model.joint_names == ('waist', 'l')
    assert model.mimic_joint_names == ('s', 'r')
    np.testing.assert_allclose(model.joint_axis[0], [0, 0, 1])         # normalised
    assert model.lower_limits[0] == -np.inf and model.upper_limits[0] == np.inf
    np.testing.assert_allclose(model.joint_damping, [0.0, 0.2])
    # s = 2 * r = 2 * (-l + 0.1)
    qj = model.joint_positions(np.array([0.3, 0.7]))
    np.testing.assert_allclose(qj, [0.3, 0.7, 2 * (-0.7 + 0.1), -0.7 + 0.1])


def test_joint_state_helpers():
    model = RobotModel.from_urdf_string(TREE_URDF)
    q = model.q_from_names(['l', 'r'], [0.5, 9.0], default=[1.0, 2.0])   # mimic names ignored
    np.testing.assert_allclose(q, [1.0, 0.5])
    with pytest.raises(UnknownJointError, match=r"unknown joint 'x'; valid joints: \[waist, l\]"):
        model.q_from_names(['x'], [1.0])
    np.testing.assert_allclose(model.q_from_names(['x', 'l'], [1, 2], ignore_unknown=True), [0, 2])
    assert model.joint_state_from_q([0.1, 0.2]) == (['waist', 'l'], [0.1, 0.2])
    with pytest.raises(UnknownFrameError, match="unknown frame 'nope'; valid frames: "):
        model.frame_pose(np.zeros(2), 'nope')


# --- DH tables ---------------------------------------------------------------------------------

def test_planar_3r_dh_matches_the_closed_form():
    l1, l2, l3 = 0.5, 0.4, 0.2
    rows = [(0.0, 0.0, 0.0, 0.0, 'revolute'), (l1, 0.0, 0.0, 0.0, 'revolute'),
            (l2, 0.0, 0.0, 0.0, 'revolute')]
    with pytest.warns(InertiaWarning, match='moves a subtree with no mass'):   # kinematics only
        model = RobotModel.from_dh(rows, tool=np.array([[1, 0, 0, l3], [0, 1, 0, 0],
                                                        [0, 0, 1, 0], [0, 0, 0, 1.0]]))
    rng = np.random.default_rng(0)
    for q in rng.uniform(-np.pi, np.pi, size=(20, 3)):
        T = model.frame_pose(q, 'tool')
        a = np.cumsum(q)
        x = l1 * np.cos(a[0]) + l2 * np.cos(a[1]) + l3 * np.cos(a[2])
        y = l1 * np.sin(a[0]) + l2 * np.sin(a[1]) + l3 * np.sin(a[2])
        np.testing.assert_allclose(T[:3, 3], [x, y, 0], atol=1e-12)
        np.testing.assert_allclose(np.arctan2(T[1, 0], T[0, 0]), np.angle(np.exp(1j * a[2])),
                                   atol=1e-12)


def test_dh_equals_the_same_arm_written_as_urdf():
    # Modified DH of a 2-link arm with an offset twist and a prismatic joint.
    rows = [dict(a=0.0, alpha=0.0, d=0.3, theta=0.2, type='revolute', limits=(-2, 2),
                 inertial=(2.0, (0.1, 0, 0), (0.01, 0.02, 0.02))),
            dict(a=0.4, alpha=-np.pi / 2, d=0.0, theta=0.0, type='prismatic',
                 limits={'lower': 0, 'upper': 0.5, 'effort': 100},
                 inertial=(1.0, (0, 0, 0.05), np.diag([0.005, 0.005, 0.001])))]
    dh = RobotModel.from_dh(rows)
    urdf = f'''<robot name="same"><link name="base_link"/>
      <link name="link1"><inertial><origin xyz="0.1 0 0"/><mass value="2"/>
        <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.02" iyz="0" izz="0.02"/></inertial></link>
      <link name="link2"><inertial><origin xyz="0 0 0.05"/><mass value="1"/>
        <inertia ixx="0.005" ixy="0" ixz="0" iyy="0.005" iyz="0" izz="0.001"/></inertial></link>
      <joint name="joint1" type="revolute"><parent link="base_link"/><child link="link1"/>
        <origin xyz="0 0 0.3" rpy="0 0 0.2"/><axis xyz="0 0 1"/>
        <limit lower="-2" upper="2" effort="1" velocity="1"/></joint>
      <joint name="joint2" type="prismatic"><parent link="link1"/><child link="link2"/>
        <origin xyz="0.4 0 0" rpy="{-np.pi / 2} 0 0"/><axis xyz="0 0 1"/>
        <limit lower="0" upper="0.5" effort="100" velocity="1"/></joint></robot>'''
    ref = RobotModel.from_urdf_string(urdf)
    rng = np.random.default_rng(1)
    q, qd, qdd = rng.uniform(0, 0.5, (3, 5, 2))
    np.testing.assert_allclose(dh.frame_pose(q, 'link2'), ref.frame_pose(q, 'link2'), atol=1e-12)
    np.testing.assert_allclose(dh.inverse_dynamics(q, qd, qdd), ref.inverse_dynamics(q, qd, qdd),
                               atol=1e-12)
    np.testing.assert_allclose(dh.upper_limits, [2, 0.5])


@pytest.mark.parametrize('rows, message', [
    ([], 'at least one row'),
    ([(0, 0, 0, 0, 'ball')], "DH row 1: joint type must be one of"),
    ([(0, 0, 0, 'x', 'revolute')], 'DH row 1: a, alpha, d, theta must be numbers'),
    ([(0, 0, 0, 0, 'prismatic')], 'DH row 1: a prismatic joint needs limits'),
    ([(0, 0, 0, np.nan, 'revolute')], 'must be finite'),
    ([(0, 0, 0)], r'expected \(a, alpha, d, theta, type'),
])
def test_bad_dh_rows(rows, message):
    with pytest.raises(ModelError, match=message):
        RobotModel.from_dh(rows)


# --- through urdf_parser_py (ROS's urdfdom_py) ----------------------------------------------

PENDULUM = '''<robot name="pendulum"><link name="base"/>
  <link name="arm"><inertial><origin xyz="0.5 0 0"/><mass value="2"/>
    <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.02" iyz="0" izz="0.02"/></inertial></link>
  <joint name="hinge" type="revolute"><parent link="base"/><child link="arm"/>
    <axis xyz="0 1 0"/><limit lower="-3" upper="3" effort="50" velocity="2"/></joint></robot>'''


def test_a_description_urdf_parser_py_read_builds_the_same_model():
    """What ROS users hold (urdf_parser_py's URDF object) loads as the same text does, and the
    torque holding a pendulum is -m g l cos(q), by hand.
    """
    from urdf_parser_py.urdf import URDF
    for text in (PENDULUM, open(DEMO_ARM).read()):
        from_object = RobotModel.from_urdf_model(URDF.from_xml_string(text))
        from_text = RobotModel.from_urdf_string(text)
        assert from_object.joint_names == from_text.joint_names
        q = np.linspace(-0.5, 0.5, from_text.nq)
        np.testing.assert_array_equal(from_object.gravity_torques(q),
                                      from_text.gravity_torques(q))
        np.testing.assert_array_equal(from_object.mass_matrix(q), from_text.mass_matrix(q))
    pendulum = RobotModel.from_urdf_model(URDF.from_xml_string(PENDULUM))
    # Its center of mass is at (l cos q, 0, -l sin q): gravity turns it by +m g l cos q about +y,
    # and the joint holds it with the opposite torque.
    for q in (0.0, 0.4, -1.1):
        np.testing.assert_allclose(pendulum.gravity_torques(np.array([q])),
                                   [-2 * 9.81 * 0.5 * np.cos(q)], atol=1e-12)


def test_a_description_built_in_code_is_checked_like_text():
    from urdf_parser_py import urdf
    robot = urdf.URDF.from_xml_string(PENDULUM)
    robot.links[1].inertial.mass = float('nan')
    with pytest.raises(UrdfError,
                       match=r"link 'arm' <inertial> <mass>: expected finite values.*got nan"):
        RobotModel.from_urdf_model(robot)
    robot = urdf.URDF.from_xml_string(PENDULUM)
    robot.joints[0].limit = None
    with pytest.raises(UrdfError, match=r"joint 'hinge': a revolute joint needs a <limit>"):
        RobotModel.from_urdf_model(robot)
    robot = urdf.URDF.from_xml_string(PENDULUM)
    robot.joints[0].origin = urdf.Pose(xyz=[0, 'x', 0])
    with pytest.raises(UrdfError, match=r"joint 'hinge' <origin xyz>: expected real numbers"):
        RobotModel.from_urdf_model(robot)
    robot.joints[0].origin = urdf.Pose(xyz=[0, 0])
    with pytest.raises(UrdfError, match=r"joint 'hinge' <origin xyz>: expected 3 number\(s\), "
                                        r"got \[0, 0\]"):
        RobotModel.from_urdf_model(robot)
    robot.links.append(urdf.Link(name='arm'))
    with pytest.raises(UrdfError, match="duplicate link name 'arm'"):
        RobotModel.from_urdf_model(robot)
    for not_a_robot in (None, 'robot.urdf', urdf.Link(name='a')):
        with pytest.raises(UrdfError, match='urdf_parser_py URDF object'):
            RobotModel.from_urdf_model(not_a_robot)


@pytest.mark.parametrize('text', [
    '<?xml version="1.0"?><!DOCTYPE robot [<!ENTITY secret SYSTEM "file:///etc/hostname">]>'
    '<robot name="&secret;"><link name="a"/></robot>',
    '<?xml version="1.0"?><!DOCTYPE r [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;">'
    '<!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;">]><robot name="&c;"><link name="a"/></robot>',
    '<!DOCTYPE robot [<!ENTITY remote SYSTEM "http://127.0.0.1:9/x">]>'
    '<robot name="r"><link name="&remote;"/></robot>',
], ids=['external entity', 'entity expansion', 'network entity'])
def test_entities_are_refused_before_anything_is_parsed(text):
    with pytest.raises(UrdfError, match='entity declarations'):
        RobotModel.from_urdf_string(text)


def test_an_undeclared_entity_is_invalid_xml_and_a_plain_doctype_loads():
    with pytest.raises(UrdfError, match='not valid XML'):
        RobotModel.from_urdf_string('<robot name="&nowhere;"><link name="a"/></robot>')
    assert RobotModel.from_urdf_string(
        '<?xml version="1.0"?><!DOCTYPE robot><!-- a comment --><robot name="r">'
        '<?processing instruction?><link name="a"/><!-- another --></robot>').nq == 0
    # Text is decoded already: a declared encoding does not decode it again.
    assert RobotModel.from_urdf_string(
        '  <?xml version="1.0" encoding="ISO-8859-1"?><robot name="r"><link name="bras_\u00e9"/>'
        '</robot>').root_link == 'bras_\u00e9'


def test_what_the_parser_reports_inside_links_and_joints_becomes_a_warning(capsys):
    """Unknown tags and attributes in a link or joint reach the model's warnings (not stderr);
    top-level tags the model does not read (ros2_control, gazebo) pass silently; and what
    urdf_parser_py reports for the user's own parse still goes where it went before.
    """
    from urdf_parser_py.urdf import URDF
    text = PENDULUM.replace('<axis', '<typo_tag/><axis').replace(
        '<link name="base"/>', '<link name="base" colour="red"/><ros2_control name="x" '
        'type="system"><hardware/></ros2_control><gazebo reference="base"/>')
    model = RobotModel.from_urdf_string(text)
    warned = ' '.join(model.warnings)
    assert 'Unknown tag "typo_tag"' in warned and 'Unknown attribute "colour"' in warned
    assert 'ros2_control' not in warned and 'gazebo' not in warned
    assert capsys.readouterr().err == ''
    URDF.from_xml_string(text)                 # the user's own parse: urdf_parser_py's handler
    assert 'Unknown tag "typo_tag"' in capsys.readouterr().err


def test_descriptions_read_on_several_threads_at_once_keep_their_own_warnings():
    """The node builds models on a thread while the user may parse too: what urdf_parser_py
    reports during one read reaches that read's warnings only.
    """
    from concurrent.futures import ThreadPoolExecutor
    texts = [PENDULUM.replace('<axis', f'<tag_{k}/><axis') for k in range(8)]
    with ThreadPoolExecutor(4) as pool:
        for _ in range(5):
            models = list(pool.map(RobotModel.from_urdf_string, texts))
            for k, model in enumerate(models):
                tags = re.findall(r'tag_\d+', ' '.join(model.warnings))
                assert tags == [f'tag_{k}'], (k, model.warnings)
