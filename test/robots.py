"""Robot descriptions the tests use: the bundled demo arm and example-robot-data's URDFs."""
import glob
import math
import os
import sysconfig
import warnings
import xml.etree.ElementTree as ET

import numpy as np

from ros_dynamics.engine import RobotModel

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEMO_ARM = os.path.join(REPO, 'ros_dynamics', 'robots', 'demo_arm.urdf')


def example_robot_data_dir():
    """``.../share/example-robot-data/robots`` of the installed example-robot-data: the PyPI
    wheel's (``cmeel.prefix``), else a ROS install's (``ros-<distro>-example-robot-data``).
    """
    candidates = [os.path.join(base, 'cmeel.prefix', 'share', 'example-robot-data', 'robots')
                  for base in {sysconfig.get_paths()['purelib'], sysconfig.get_paths()['platlib']}]
    for prefix in os.environ.get('AMENT_PREFIX_PATH', '').split(os.pathsep):
        if prefix:
            candidates.append(os.path.join(prefix, 'share', 'example-robot-data', 'robots'))
    for path in candidates:
        if os.path.isdir(path):
            return path
    raise RuntimeError('example-robot-data is not installed (make env installs it; on a ROS '
                       'install: pip install example-robot-data, or ros-<distro>-example-robot-'
                       'data)')


def erd(relative):
    """Path of a URDF inside example-robot-data's robots folder."""
    path = os.path.join(example_robot_data_dir(), relative)
    if not os.path.isfile(path):
        raise FileNotFoundError(path)
    return path


def load(path):
    """Model of a URDF file, its inertia warnings silenced (the catalogue tests check them)."""
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        return RobotModel.from_urdf_file(path)


def all_example_urdfs():
    """Every URDF shipped in example-robot-data, sorted, as paths relative to its robots folder."""
    root = example_robot_data_dir()
    return sorted(os.path.relpath(p, root)
                  for p in glob.glob(os.path.join(root, '**', '*.urdf'), recursive=True))


# Real robots the comparisons run on: arms with and without mimic joints, prismatic joints,
# branched trees and models with many fixed links.
PANDA = 'panda_description/urdf/panda.urdf'                    # 7 DOF + mimic finger
UR5 = 'ur_description/urdf/ur5_robot.urdf'                      # 6 DOF, fixed world link
KINOVA = 'kinova_description/robots/kinova.urdf'               # continuous joints
TALOS = 'talos_data/robots/talos_reduced.urdf'                  # branched humanoid, many fixed
BAXTER = 'baxter_description/urdf/baxter.urdf'                  # no IK family: 10 mm wrist offset
TIAGO = 'tiago_description/robots/tiago.urdf'                   # prismatic torso joint
PR2 = 'pr2_description/urdf/pr2.urdf'                           # branched, prismatic, continuous
COMPARED = [PANDA, UR5, KINOVA, TALOS, TIAGO, PR2]
# Humanoids and quadrupeds compared with a floating base (a free flyer, as Pinocchio's root_joint).
SOLO12 = 'solo_description/robots/solo12.urdf'
ANYMAL = 'anymal_b_simple_description/robots/anymal.urdf'
GO1 = 'go1_description/urdf/go1.urdf'
ROMEO = 'romeo_description/urdf/romeo_small.urdf'
ICUB = 'icub_description/robots/icub_reduced.urdf'
FLOATING = [TALOS, SOLO12, ANYMAL, GO1, ROMEO, ICUB]


def load_floating(path, root_joint='floating'):
    """Model of a URDF file with a root joint, inertia warnings silenced."""
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        return RobotModel.from_urdf_file(path, root_joint=root_joint)


# A small branched tree written for the tests: a continuous joint, revolute joints, a mimic
# chain (r follows l, s follows r) and a prismatic joint, inertials with rotated origins.
TREE_URDF = '''<robot name="tree">
  <link name="base"/>
  <link name="torso"><inertial><origin xyz="0 0 0.1" rpy="0 0.5 0"/><mass value="3"/>
    <inertia ixx="0.3" ixy="0.01" ixz="0" iyy="0.2" iyz="0" izz="0.25"/></inertial></link>
  <link name="left"><inertial><mass value="1"/>
    <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial></link>
  <link name="right"><inertial><mass value="1"/>
    <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial></link>
  <link name="slider"><inertial><mass value="0.5"/>
    <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial></link>
  <joint name="waist" type="continuous"><parent link="base"/><child link="torso"/>
    <axis xyz="0 0 2"/></joint>
  <joint name="l" type="revolute"><parent link="torso"/><child link="left"/>
    <origin xyz="0 0.2 0.3"/><axis xyz="1 0 0"/>
    <limit lower="-2" upper="2" effort="5" velocity="3"/><dynamics damping="0.2" friction="0.1"/>
  </joint>
  <joint name="r" type="revolute"><parent link="torso"/><child link="right"/>
    <origin xyz="0 -0.2 0.3"/><axis xyz="1 0 0"/>
    <limit lower="-2" upper="2" effort="5" velocity="3"/>
    <mimic joint="l" multiplier="-1" offset="0.1"/>
  </joint>
  <joint name="s" type="prismatic"><parent link="left"/><child link="slider"/>
    <axis xyz="0 0 1"/><limit lower="0" upper="0.3" effort="50" velocity="0.5"/>
    <mimic joint="r" multiplier="2"/>
  </joint>
</robot>'''


def serial_urdf(name, joints, tool='0.1 0.01 0.02', tool_rpy='0.1 0.2 0.3'):
    """A URDF (a string) of revolute joints ``j1``, ``j2``, ... in a series, each ``(origin
    xyz, axis xyz, lower, upper)`` (strings, limits in rad), links ``l0`` ... of 1 kg, and a
    frame ``tool`` fixed at ``tool`` (xyz) and ``tool_rpy`` after the last.
    """
    inertial = ('<inertial><mass value="1"/><inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0"'
                ' ixz="0" iyz="0"/></inertial>')
    links = ''.join(f'<link name="l{i}">{inertial}</link>' for i in range(len(joints) + 1))
    body = ''.join(
        f'<joint name="j{i + 1}" type="revolute"><parent link="l{i}"/><child link="l{i + 1}"/>'
        f'<origin xyz="{xyz}"/><axis xyz="{axis}"/>'
        f'<limit lower="{lower}" upper="{upper}" effort="1" velocity="1"/></joint>'
        for i, (xyz, axis, lower, upper) in enumerate(joints))
    tool = (f'<link name="tool"/><joint name="tool_joint" type="fixed"><parent '
            f'link="l{len(joints)}"/><child link="tool"/><origin xyz="{tool}" rpy="{tool_rpy}"/>'
            '</joint>')
    return f'<robot name="{name}">{links}{body}{tool}</robot>'


def calibrated(relative, directory, angle, distance, seed):
    """A copy (in ``directory``) of an example-robot-data description (``relative`` to its
    robots, or a file's absolute path) with every revolute joint's axis tilted by ``angle``
    [rad] and its origin moved by about ``distance`` [m], in random directions (generator
    ``seed``): a calibrated robot. Its path.
    """
    rng = np.random.default_rng(seed)
    tree = ET.parse(relative if os.path.isabs(relative) else erd(relative))
    for joint in tree.getroot().iter('joint'):
        if joint.get('type') not in ('revolute', 'continuous'):
            continue
        axis = joint.find('axis')
        a = np.array([float(v) for v in axis.get('xyz').split()])
        a /= np.linalg.norm(a)
        u = rng.normal(size=3)
        t = np.cross(a, u / np.linalg.norm(u))
        a = math.cos(angle) * a + math.sin(angle) * t / np.linalg.norm(t)
        axis.set('xyz', ' '.join(f'{v:.17g}' for v in a))
        origin = joint.find('origin')
        xyz = np.array([float(v) for v in origin.get('xyz').split()])
        origin.set('xyz', ' '.join(f'{v:.17g}' for v in xyz + rng.normal(scale=distance, size=3)))
    path = os.path.join(str(directory), relative.split('/')[-1])
    tree.write(path)
    return path


def flipped(relative, directory, joints):
    """A copy (in ``directory``) of an example-robot-data description with the axes of the
    revolute or continuous ``joints`` (names) reversed and their limits mirrored: the same
    robot, those joints' angles negated. Its path.
    """
    tree = ET.parse(erd(relative))
    for joint in tree.getroot().iter('joint'):
        if joint.get('name') not in joints:
            continue
        axis = joint.find('axis')
        if axis is None:                                     # URDF's default: x
            axis = ET.SubElement(joint, 'axis', xyz='1 0 0')
        axis.set('xyz', ' '.join(f'{-float(v):.17g}' for v in axis.get('xyz').split()))
        limit = joint.find('limit')
        if limit is not None and limit.get('lower') is not None:
            lower, upper = float(limit.get('lower')), float(limit.get('upper'))
            limit.set('lower', f'{-upper:.17g}')
            limit.set('upper', f'{-lower:.17g}')
    path = os.path.join(str(directory), 'flipped_' + relative.split('/')[-1])
    tree.write(path)
    return path
