"""Robot descriptions swapped into a running node, across processes: any frame name gives valid,
distinct topics; per-tip topics of replaced models are destroyed; descriptions above the limits
or with too many tips are refused; a slow build does not stop joint states being answered.
"""
import re

import numpy as np
import pytest
from robots import DEMO_ARM
from ros_helpers import NodeProcess, client_node, spin_until

rclpy = pytest.importorskip('rclpy', reason='ROS 2 (rclpy) is part of make env')
from geometry_msgs.msg import PoseStamped  # noqa: E402
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from std_msgs.msg import String  # noqa: E402

from ros_dynamics.engine import RobotModel  # noqa: E402
from ros_dynamics.ros.frame_names import topic_token  # noqa: E402

XML = open(DEMO_ARM).read()
MODEL = RobotModel.from_urdf_file(DEMO_ARM)
Q = [0.2, -0.7, 0.9, 0.1, 0.3, 0.0]
LATCHED = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                     durability=DurabilityPolicy.TRANSIENT_LOCAL)
LONG = 'l' * 300


def with_tools(*names):
    """The demo arm with fixed leaf links ``names`` hanging from tool0."""
    extra = ''.join(f'<link name="{n}"/><joint name="j{k}" type="fixed"><parent link="tool0"/>'
                    f'<child link="{n}"/></joint>' for k, n in enumerate(names))
    return XML.replace('</robot>', extra + '</robot>')


def with_chains(n):
    """The demo arm with ``n`` one-joint chains on its root link: ``n + 1`` default tips."""
    extra = ''.join(f'<link name="fan{k}"/><joint name="fan_j{k}" type="revolute">'
                    f'<parent link="{MODEL.root_link}"/><child link="fan{k}"/>'
                    '<limit lower="-1" upper="1" effort="1" velocity="1"/></joint>'
                    for k in range(n))
    return XML.replace('</robot>', extra + '</robot>')


def chain(links):
    """A serial chain of ``links`` revolute joints (slow to build when long)."""
    body = ['<robot name="chain"><link name="l0"/>']
    for k in range(1, links + 1):
        body.append(f'<link name="l{k}"><inertial><mass value="1"/><inertia ixx="1" ixy="0" '
                    f'ixz="0" iyy="1" iyz="0" izz="1"/></inertial></link>'
                    f'<joint name="j{k}" type="revolute"><parent link="l{k - 1}"/>'
                    f'<child link="l{k}"/><axis xyz="0 0 1"/>'
                    f'<limit lower="-1" upper="1" effort="1" velocity="1"/></joint>')
    return ''.join(body) + '</robot>'


@pytest.fixture(scope='module')
def client():
    with client_node('descriptions_client') as node:
        yield node


def tip_topics(client, ns):
    return sorted(name for name, _ in client.get_topic_names_and_types()
                  if re.match(f'/{ns}/(poses|twists|jacobians|wrenches)/', name))


def demo_arm_node(client, tmp_path, ns, *params):
    """A node process on the demo arm in namespace ``ns`` (``params`` added) and, on
    ``client``: the gravity torques it publishes (a list filled as they come), a joint state
    publisher and a latched robot_description publisher.
    """
    node = NodeProcess('dynamics_node', '-r', f'__ns:=/{ns}', '-p', f'urdf_file:={DEMO_ARM}',
                       *params, log_path=str(tmp_path / 'n.log'))
    torques = []
    client.create_subscription(JointState, f'/{ns}/gravity_torques', torques.append, 100)
    pub = client.create_publisher(JointState, f'/{ns}/joint_states', 10)
    desc = client.create_publisher(String, f'/{ns}/robot_description', LATCHED)
    return node, torques, pub, desc


def test_any_frame_name_starts_and_distinct_frames_get_distinct_topics(client, tmp_path):
    ns = 'names'
    urdf = tmp_path / 'tools.urdf'
    urdf.write_text(with_tools('tool/0', 'tool_0', LONG))
    node = NodeProcess('dynamics_node', '-r', f'__ns:=/{ns}', '-p', f'urdf_file:={urdf}',
                       '-p', f'tip_frames:=["tool/0", "tool_0", "{LONG}"]',
                       log_path=str(tmp_path / 'n.log'))
    try:
        got = {}
        for frame in ('tool/0', 'tool_0', LONG):
            client.create_subscription(PoseStamped, f'/{ns}/poses/{topic_token(frame)}',
                                       lambda m, f=frame: got.__setitem__(f, m), 10)
        pub = client.create_publisher(JointState, f'/{ns}/joint_states', 10)
        state = JointState(name=list(MODEL.joint_names), position=Q)
        assert spin_until(client, lambda: len(got) == 3, 20.0, lambda: pub.publish(state)), \
            node.output()
        assert len(tip_topics(client, ns)) == 12
    finally:
        assert node.stop() == 0, node.output()


def test_swaps_destroy_old_tip_topics_and_bad_descriptions_are_refused(client, tmp_path):
    ns = 'swaps'
    node, torques, pub, desc = demo_arm_node(client, tmp_path, ns,
                                             '-p', 'description.max_bytes:=200000',
                                             '-p', 'max_tip_frames:=50')
    state = JointState(name=list(MODEL.joint_names), position=Q)
    try:
        assert spin_until(client, lambda: torques, 20.0, lambda: pub.publish(state))
        for k in range(30):                     # 30 swaps, a new default tip name each
            desc.publish(String(data=with_tools(f'swap{k}_a', f'swap{k}_b')))
            assert spin_until(client, lambda k=k: f"tips ['swap{k}_b']" in node.output(),
                              10.0, lambda: pub.publish(state)), node.output()
        assert spin_until(client, lambda: len(tip_topics(client, ns)) == 4, 10.0), \
            tip_topics(client, ns)
        refusals = [
            (XML + ' ' * 200_000, 'more than description.max_bytes'),
            (with_chains(60), 'more than max_tip_frames (50)'),
            ('<robot name="x"><link name="a"/>' + '<link>' * 10, 'refused the robot desc'),
            ('<!DOCTYPE r [<!ENTITY x SYSTEM "file:///etc/hostname">]><robot name="&x;">'
             '<link name="a"/></robot>', 'entity declarations'),
        ]
        for xml, reason in refusals:
            before = node.output().count('refused the robot description')
            desc.publish(String(data=xml))
            assert spin_until(client, lambda r=reason, b=before: r in node.output() and
                              node.output().count('refused the robot description') > b, 10.0,
                              lambda: pub.publish(state)), (reason, node.output()[-2000:])
            torques.clear()
            assert spin_until(client, lambda: torques, 10.0, lambda: pub.publish(state))
        assert len(tip_topics(client, ns)) == 4
        # Origins of 1e308: refused, or served without a single non-finite number published.
        huge = XML.replace('xyz="0 0 0.2125"', 'xyz="1e308 0 1e308"', 1)
        assert huge != XML
        desc.publish(String(data=huge))
        spin_until(client, lambda: False, 2.0, lambda: pub.publish(state))
        assert all(np.all(np.isfinite(t.effort)) for t in torques)
        assert node.proc.poll() is None
    finally:
        assert node.stop() == 0, node.output()


def test_joint_states_answered_while_a_big_description_builds(client, tmp_path):
    ns = 'building'
    node, torques, pub, desc = demo_arm_node(client, tmp_path, ns, '-p', 'tip_frames:=[tool0]',
                                             '-p', 'ik.seed_samples:=0')
    state = JointState(name=list(MODEL.joint_names), position=Q)
    try:
        assert spin_until(client, lambda: torques, 20.0, lambda: pub.publish(state))
        desc.publish(String(data=chain(3000).replace('<link name="l3000">',
                                                     '<link name="tool0"/><link name="l3000">')
                            .replace('</robot>', '<joint name="t" type="fixed"><parent '
                                     'link="l3000"/><child link="tool0"/></joint></robot>')))
        torques.clear()
        assert spin_until(client, lambda: "model 'chain'" in node.output(), 60.0,
                          lambda: pub.publish(state)), node.output()[-2000:]
        answered_meanwhile = len(torques)
        assert answered_meanwhile > 0
        np.testing.assert_allclose(torques[0].effort, MODEL.gravity_torques(np.array(Q)),
                                   atol=1e-9)
    finally:
        assert node.stop() == 0, node.output()
