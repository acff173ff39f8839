"""The dynamics node as a separate process, exercised by real rclpy publishers and subscribers."""
import numpy as np
import pytest
from robots import DEMO_ARM
from ros_helpers import NodeProcess, client_node, spin_until

rclpy = pytest.importorskip('rclpy', reason='ROS 2 (rclpy) is part of make env')
from geometry_msgs.msg import PoseStamped  # noqa: E402
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy, qos_profile_sensor_data  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from std_msgs.msg import Float64MultiArray, String  # noqa: E402

from ros_dynamics.engine import RobotModel  # noqa: E402
from ros_dynamics.engine.rotations import matrix_from_quat_xyzw  # noqa: E402

MODEL = RobotModel.from_urdf_file(DEMO_ARM)


@pytest.fixture(scope='module')
def ros():
    with client_node('test_client') as node:
        yield node


def joint_state(q, names=MODEL.joint_names, stamp_sec=0):
    msg = JointState()
    msg.header.stamp.sec = stamp_sec
    msg.name = list(names)
    msg.position = [float(x) for x in q]
    return msg


def test_node_serves_gravity_and_poses_and_drops_bad_messages(ros, tmp_path):
    ns = 'arm1'
    # The joint states are stamped in test seconds, not on the node's clock: no age bound.
    node = NodeProcess('dynamics_node', '-r', f'__ns:=/{ns}', '-p', f'urdf_file:={DEMO_ARM}',
                       '-p', 'command_joints:=[elbow_joint, shoulder_pan_joint]',
                       '-p', 'command.max_state_age:=0.0',
                       log_path=str(tmp_path / 'node.log'))
    try:
        torques, commands, poses = {}, [], {}
        ros.create_subscription(JointState, f'/{ns}/gravity_torques',
                                lambda m: torques.__setitem__(m.header.stamp.sec, m), 100)
        ros.create_subscription(Float64MultiArray, f'/{ns}/gravity_command', commands.append, 100)
        ros.create_subscription(PoseStamped, f'/{ns}/poses/tool0',
                                lambda m: poses.__setitem__(m.header.stamp.sec, m), 100)
        pub = ros.create_publisher(JointState, f'/{ns}/joint_states', qos_profile_sensor_data)
        rng = np.random.default_rng(5)
        good = {sec: rng.uniform(-2, 2, MODEL.nq) for sec in range(1, 21)}

        def publish_all():
            for sec, q in good.items():
                if sec not in torques or sec not in poses:
                    pub.publish(joint_state(q, stamp_sec=sec))
                    bad = joint_state(q, stamp_sec=1000 + sec)
                    bad.position = bad.position[:-1]                  # lengths disagree
                    pub.publish(bad)
                    nan = joint_state(q, stamp_sec=2000 + sec)
                    nan.position[2] = float('nan')
                    pub.publish(nan)

        assert spin_until(ros, lambda: len(torques) == len(good) and len(poses) == len(good),
                          timeout=20.0, step=publish_all), \
            (sorted(set(good) - set(torques)), sorted(set(good) - set(poses)), node.output())
        assert all(sec in good for sec in torques), 'a dropped message was answered'
        for sec, q in good.items():
            msg = torques[sec]
            assert list(msg.name) == list(MODEL.joint_names)
            np.testing.assert_allclose(msg.effort, MODEL.gravity_torques(q), atol=1e-9)
            T = MODEL.frame_pose(q, 'tool0')
            pose = poses[sec]
            assert pose.header.frame_id == MODEL.root_link
            p, o = pose.pose.position, pose.pose.orientation
            np.testing.assert_allclose([p.x, p.y, p.z], T[:3, 3], atol=1e-12)
            np.testing.assert_allclose(matrix_from_quat_xyzw([o.x, o.y, o.z, o.w]), T[:3, :3],
                                       atol=1e-12)
        last = commands[-1]
        assert [d.label for d in last.layout.dim] == ['joints'] and len(last.data) == 2
    finally:
        assert node.stop() == 0, node.output()
    assert 'dropped a joint state' in node.output()


def test_node_takes_a_late_robot_description_from_the_topic(ros, tmp_path):
    ns = 'arm2'
    latched = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                         durability=DurabilityPolicy.TRANSIENT_LOCAL)
    desc_pub = ros.create_publisher(String, f'/{ns}/robot_description', latched)
    with open(DEMO_ARM) as f:
        desc_pub.publish(String(data=f.read()))        # published before the node exists
    node = NodeProcess('dynamics_node', '-r', f'__ns:=/{ns}', log_path=str(tmp_path / 'n.log'))
    try:
        got = []
        ros.create_subscription(JointState, f'/{ns}/gravity_torques', got.append, 10)
        pub = ros.create_publisher(JointState, f'/{ns}/joint_states', 10)
        q = np.full(MODEL.nq, 0.3)
        assert spin_until(ros, lambda: got, 20.0, lambda: pub.publish(joint_state(q))), \
            node.output()
        np.testing.assert_allclose(got[-1].effort, MODEL.gravity_torques(q), atol=1e-9)
        # A broken description is refused; the old model keeps serving.
        desc_pub.publish(String(data='<robot name="broken"><link name="a"></robot>'))
        refused = 'refused the robot description from the robot_description topic'
        assert spin_until(ros, lambda: refused in node.output(), 10.0,
                          lambda: pub.publish(joint_state(q))), node.output()
        got.clear()
        assert spin_until(ros, lambda: len(got) > 3, 10.0, lambda: pub.publish(joint_state(q)))
        np.testing.assert_allclose(got[-1].effort, MODEL.gravity_torques(q), atol=1e-9)
    finally:
        code = node.stop()
        assert code == 0, node.output()


def test_node_refuses_to_start_on_a_broken_description(tmp_path):
    broken = tmp_path / 'broken.urdf'
    broken.write_text('<robot name="b"><link name="a"/><joint name="j" type="ball">'
                      '<parent link="a"/><child link="a"/></joint></robot>')
    node = NodeProcess('dynamics_node', '-p', f'urdf_file:={broken}',
                       log_path=str(tmp_path / 'n.log'))
    node.proc.wait(30)
    assert node.proc.returncode != 0
    assert "joint[@name='j']: Invalid joint type: ball" in node.output()
