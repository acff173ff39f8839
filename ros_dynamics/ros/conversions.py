"""Conversions between ROS messages and NumPy arrays (REP 103 units; quaternions x, y, z, w)."""
import numpy as np

from ..engine.rotations import matrix_from_quat_xyzw, quat_xyzw_from_matrix


def pose_from_matrix(T, pose):
    """Fill a ``geometry_msgs/Pose`` from ``T`` (4, 4); returns it."""
    x, y, z = (float(v) for v in T[:3, 3])
    pose.position.x, pose.position.y, pose.position.z = x, y, z
    qx, qy, qz, qw = (float(v) for v in quat_xyzw_from_matrix(T[:3, :3]))
    pose.orientation.x, pose.orientation.y = qx, qy
    pose.orientation.z, pose.orientation.w = qz, qw
    return pose


def matrix_from_pose(pose):
    """``T`` (4, 4) of a ``geometry_msgs/Pose``; the quaternion is normalised, a zero or
    non-finite one raises :class:`~ros_dynamics.engine.exceptions.InvalidInputError`.
    """
    T = np.eye(4)
    o = pose.orientation
    T[:3, :3] = matrix_from_quat_xyzw([o.x, o.y, o.z, o.w])
    T[:3, 3] = (pose.position.x, pose.position.y, pose.position.z)
    return T


def vector6_to_twist(v, twist):
    """Fill a ``geometry_msgs/Twist`` from ``[linear; angular]`` (6,)."""
    twist.linear.x, twist.linear.y, twist.linear.z = (float(x) for x in v[:3])
    twist.angular.x, twist.angular.y, twist.angular.z = (float(x) for x in v[3:])
    return twist


def wrench_to_vector6(wrench):
    """``[force; torque]`` (6,) of a ``geometry_msgs/Wrench``."""
    f, t = wrench.force, wrench.torque
    return np.array([f.x, f.y, f.z, t.x, t.y, t.z], dtype=float)


def vector6_to_wrench(w, wrench):
    """Fill a ``geometry_msgs/Wrench`` from ``[force; torque]`` (6,)."""
    wrench.force.x, wrench.force.y, wrench.force.z = (float(x) for x in w[:3])
    wrench.torque.x, wrench.torque.y, wrench.torque.z = (float(x) for x in w[3:])
    return wrench
