"""rviz markers of the dynamics: center of mass, manipulability ellipsoids, gravity torques.

All markers are in one URDF link frame (the node's base frame, with robot_state_publisher's
``frame_prefix``), so rviz draws them beside the RobotModel display that robot_state_publisher's
TF drives. Namespaces: ``ros_dynamics/center_of_mass``, ``ros_dynamics/manipulability/<tip>``
(one per tip), ``ros_dynamics/gravity_torque`` (id: the actuated joint's index) and, for a
floating or planar base, ``ros_dynamics/support_polygon`` and
``ros_dynamics/center_of_mass_projection`` (:mod:`~ros_dynamics.ros.base_outputs`). A torque
arrow that would be shorter than :data:`MIN_ARROW` is deleted instead of drawn;
:func:`delete_all` clears every marker (sent when the model, the tips, the contacts or the
markers switch change).
"""
from geometry_msgs.msg import Point
import numpy as np
from visualization_msgs.msg import Marker, MarkerArray

from ..engine.rotations import quat_xyzw_from_matrix

_NS = 'ros_dynamics'
#: Shortest torque arrow drawn [m].
MIN_ARROW = 1e-4


def make_marker(frame, stamp, marker_id, ns, kind, rgba):
    """A marker of namespace ``ros_dynamics/<ns>``, identity pose, color ``rgba``."""
    m = Marker()
    m.header.frame_id = frame
    m.header.stamp = stamp
    m.ns = f'{_NS}/{ns}'
    m.id = marker_id
    m.type = kind
    m.action = Marker.ADD
    m.color.r, m.color.g, m.color.b, m.color.a = rgba
    m.pose.orientation.w = 1.0
    return m


def _set_position(m, p):
    m.pose.position.x, m.pose.position.y, m.pose.position.z = (float(v) for v in p)


def manipulability_ellipsoid(J_linear):
    """Axes (3, 3) (columns, right-handed) and semi-axis lengths (3,) of the velocity
    manipulability ellipsoid ``{J qd : |qd| <= 1}`` from the linear rows ``J_linear`` (3, n).
    """
    values, axes = np.linalg.eigh(J_linear @ J_linear.T)
    if np.linalg.det(axes) < 0:
        axes[:, 2] = -axes[:, 2]
    return axes, np.sqrt(np.clip(values, 0.0, None))


def build(frame, stamp, com, tips, ellipsoids, joint_origins, joint_axes, torques, effort_limits,
          scale=0.2):
    """MarkerArray: COM sphere, one ellipsoid per tip and one arrow per joint along its axis
    whose length shows the gravity torque (relative to the effort limit when one is known).

    Positions, axes and ellipsoids are given in ``frame``; ``scale`` [m] sizes ellipsoids and
    arrows.
    """
    out = MarkerArray()
    m = make_marker(frame, stamp, 0, 'center_of_mass', Marker.SPHERE, (1.0, 0.8, 0.0, 0.9))
    _set_position(m, com)
    m.scale.x = m.scale.y = m.scale.z = 0.05
    out.markers.append(m)
    for tip, (position, axes, lengths) in zip(tips, ellipsoids):
        m = make_marker(frame, stamp, 0, f'manipulability/{tip}', Marker.SPHERE,
                    (0.2, 0.6, 1.0, 0.4))
        m.text = tip
        _set_position(m, position)
        qx, qy, qz, qw = (float(v) for v in quat_xyzw_from_matrix(axes))
        m.pose.orientation.x, m.pose.orientation.y = qx, qy
        m.pose.orientation.z, m.pose.orientation.w = qz, qw
        top = max(float(np.max(lengths)), 1e-9)
        m.scale.x, m.scale.y, m.scale.z = (max(float(v) / top * scale, 1e-3) for v in lengths)
        out.markers.append(m)
    for k, (p, z, tau, limit) in enumerate(zip(joint_origins, joint_axes, torques, effort_limits)):
        ratio = tau / limit if np.isfinite(limit) and limit > 0 else np.tanh(tau / 10.0)
        m = make_marker(frame, stamp, k, 'gravity_torque', Marker.ARROW,
                    (1.0, 0.2, 0.2, 0.9) if tau >= 0 else (0.2, 0.2, 1.0, 0.9))
        if not abs(ratio * scale) >= MIN_ARROW:
            m.action = Marker.DELETE               # no zero-length arrows
            out.markers.append(m)
            continue
        m.points = [Point(x=float(p[0]), y=float(p[1]), z=float(p[2])),
                    Point(x=float(p[0] + z[0] * ratio * scale),
                          y=float(p[1] + z[1] * ratio * scale),
                          z=float(p[2] + z[2] * ratio * scale))]
        m.scale.x, m.scale.y, m.scale.z = 0.01, 0.02, 0.02
        out.markers.append(m)
    return out


def delete_all(frame, stamp):
    """MarkerArray of one DELETEALL marker: rviz forgets every marker of this topic."""
    m = make_marker(frame, stamp, 0, '', Marker.SPHERE, (0.0, 0.0, 0.0, 0.0))
    m.ns = ''
    m.action = Marker.DELETEALL
    return MarkerArray(markers=[m])
