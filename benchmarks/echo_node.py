"""The floor rclpy sets: a node that republishes every joint state it receives, unchanged.

Same QoS and executor as dynamics_node; the benchmark runs it beside ours.
"""
import sys

import rclpy
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState


def main():
    rclpy.init(args=sys.argv)
    node = rclpy.create_node('echo')
    pub = node.create_publisher(JointState, 'gravity_torques', 10)
    qos = QoSProfile(depth=50, reliability=ReliabilityPolicy.BEST_EFFORT,
                     durability=DurabilityPolicy.VOLATILE, history=HistoryPolicy.KEEP_LAST)
    node.create_subscription(JointState, 'joint_states', pub.publish, qos)
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    try:
        executor.spin()
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        node.destroy_node()
        rclpy.try_shutdown()


if __name__ == '__main__':
    main()
