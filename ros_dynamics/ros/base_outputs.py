"""Outputs of the whole robot and of its base: actuated gravity torques (held by the world for
a fixed base, by the contacts for a floating or planar one), center of mass, centroidal
momentum, and the support polygon with the center of mass's ground projection as rviz markers.

Pure functions of a model, a :class:`~ros_dynamics.engine.kinematics.KinematicState` and the
node's :class:`~ros_dynamics.ros.settings.NodeSettings`; none needs a running node.

Frames: ``world`` is the engine's fixed frame -- the frame id ``world_frame`` of a floating or
planar base (the odometry's frame), the URDF root link of a fixed base (:func:`world_frame_id`).
Messages:

- ``center_of_mass`` (``geometry_msgs/PointStamped``): the center of mass of the moving bodies
  (payloads included; a fixed root link is not counted, as in Pinocchio) in world [m].
- ``momentum`` (``geometry_msgs/WrenchStamped``): the centroidal momentum ``h_G``, ``force`` =
  linear momentum [kg m/s], ``torque`` = angular momentum about the center of mass [kg m^2/s],
  both in world axes. A momentum is a spatial *force*-like vector (Featherstone; Pinocchio's
  ``Force``): it changes frame as a wrench does and its rate is the net external wrench about
  the center of mass, so the wrench type carries it without relabelling a twist.
"""
from geometry_msgs.msg import Point, PointStamped, WrenchStamped
import numpy as np
from visualization_msgs.msg import Marker

from ..engine import centroidal, contacts, rnea
from ..engine.exceptions import StanceError
from ..engine.spatial import inverse_transform
from .outputs import check_finite, holding_torques

#: Namespaces of the support markers (under ``ros_dynamics/``).
SUPPORT_NS = 'support_polygon'
PROJECTION_NS = 'center_of_mass_projection'


def world_frame_id(model, settings):
    """Frame id of the world frame (with the frame prefix)."""
    frame = settings.base.world_frame if settings.base.root_joint else model.root_link
    return settings.frame_prefix + frame


def actuated_gravity(model, state, settings, wrenches, jacobians_):
    """Torques (n_actuated,) [N m or N] of ``model.actuated_joint_names`` holding the robot
    still against gravity.

    A fixed base: :func:`~ros_dynamics.ros.outputs.holding_torques` (gravity and the wrenches
    held at the tips). A floating or planar base: the torques of
    :func:`~ros_dynamics.engine.contacts.contact_gravity_torques` on the settings' contact
    frames (tip wrenches are not part of them). Raises
    :class:`~ros_dynamics.engine.exceptions.StanceError` when no contact is set or the contacts
    cannot hold the robot, :class:`~ros_dynamics.ros.outputs.NonFiniteOutput` for NaN or Inf.
    """
    base = settings.base
    if not base.root_joint:
        tau = holding_torques(model, state, settings, wrenches, jacobians_)
        return tau[model.actuated_v_index] if model.has_multi_dof else tau
    if not base.contact_frames:
        raise StanceError('no contact_frames: nothing holds the floating base')
    result = contacts.contact_gravity_torques(model, state, list(base.contact_frames),
                                              base.contact_type, base.friction)
    check_finite('contact torques', result.torques)
    return result.torques


def center_of_mass_message(model, state, settings, stamp):
    """``center_of_mass``: PointStamped in world, or None for a model without moving mass."""
    if not model.total_mass > 0:
        return None
    com_world = rnea.center_of_mass(model, state)
    check_finite('center of mass', com_world)
    msg = _in_world(PointStamped(), model, settings, stamp)
    msg.point.x, msg.point.y, msg.point.z = (float(c) for c in com_world)
    return msg


def momentum_message(model, state, settings, stamp):
    """``momentum``: the centroidal momentum as a WrenchStamped in world (module docstring);
    None for a model without moving mass. ``state`` must hold velocities.
    """
    if not model.total_mass > 0:
        return None
    h_G = centroidal.centroidal_momentum(model, state)
    check_finite('centroidal momentum', h_G)
    msg = _in_world(WrenchStamped(), model, settings, stamp)
    f, t = msg.wrench.force, msg.wrench.torque
    f.x, f.y, f.z = (float(c) for c in h_G[:3])
    t.x, t.y, t.z = (float(c) for c in h_G[3:])
    return msg


def _in_world(msg, model, settings, stamp):
    """``msg`` stamped and in the world frame."""
    msg.header.stamp = stamp
    msg.header.frame_id = world_frame_id(model, settings)
    return msg


def up_direction(gravity):
    """Unit normal of the ground: opposite to ``gravity`` (z without gravity)."""
    g = np.asarray(gravity, dtype=float)
    norm = float(np.linalg.norm(g))
    return -g / norm if norm > 0 else np.array([0.0, 0.0, 1.0])


def ground_basis(up):
    """Two unit vectors (2, 3) spanning the plane normal to ``up``, right-handed with it."""
    helper = np.array([1.0, 0.0, 0.0]) if abs(up[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
    e1 = np.cross(up, helper)
    e1 /= np.linalg.norm(e1)
    return np.stack([e1, np.cross(up, e1)])


def convex_hull_2d(points):
    """Indices of the convex hull of ``points`` (n, 2), counter-clockwise, collinear points
    left out (Andrew's monotone chain); one index for coincident points, two for a segment.
    """
    pts = np.asarray(points, dtype=float)
    order = sorted(range(len(pts)), key=lambda i: (pts[i, 0], pts[i, 1]))
    scale = max(float(np.max(np.abs(pts), initial=0.0)), 1.0)

    def turn(o, a, b):
        return ((pts[a, 0] - pts[o, 0]) * (pts[b, 1] - pts[o, 1])
                - (pts[a, 1] - pts[o, 1]) * (pts[b, 0] - pts[o, 0]))

    def chain(indices):
        out = []
        for i in indices:
            while len(out) >= 2 and turn(out[-2], out[-1], i) <= 1e-12 * scale * scale:
                out.pop()
            out.append(i)
        return out

    order = [i for k, i in enumerate(order)              # coincident points once
             if k == 0 or np.any(pts[i] != pts[order[k - 1]])]
    if len(order) <= 2:
        return order
    lower, upper = chain(order), chain(order[::-1])
    return lower[:-1] + upper[:-1]


def support_polygon(p_world_contacts, com_world, gravity):
    """The support polygon and the center of mass's ground projection, in world [m].

    The ground is the plane normal to gravity through the lowest contact point. Returns the
    hull of the contact points projected on it ``(k, 3)`` (counter-clockwise seen from above),
    the projected center of mass (3,) and whether it lies inside the polygon (on its edge
    counts; a polygon of fewer than 3 corners holds nothing inside).
    """
    up = up_direction(gravity)
    P = np.asarray(p_world_contacts, dtype=float).reshape(-1, 3)
    height = float(np.min(P @ up)) if len(P) else 0.0
    corners = P - np.outer(P @ up - height, up)
    com_ground = com_world - (float(com_world @ up) - height) * up
    E = ground_basis(up)
    uv = corners @ E.T
    hull = convex_hull_2d(uv) if len(P) else []
    inside = False
    if len(hull) >= 3:
        c = E @ com_ground
        ring = uv[hull]
        edges = np.roll(ring, -1, axis=0) - ring
        cross = edges[:, 0] * (c[1] - ring[:, 1]) - edges[:, 1] * (c[0] - ring[:, 0])
        inside = bool(np.all(cross >= -1e-12 * max(1.0, float(np.max(np.abs(ring))))))
    return corners[hull], com_ground, inside


def support_markers(model, state, settings, stamp, make_marker):
    """Markers of the support polygon (``LINE_STRIP``, closed) and of the center of mass's
    ground projection (a flat disc, green inside the polygon, red outside), in the markers'
    frame (the settings' base frame). ``make_marker(frame, stamp, id, ns, type, rgba)`` builds
    a marker (:mod:`~ros_dynamics.ros.markers`). Empty for a fixed base.
    """
    base = settings.base
    if not base.root_joint:
        return []
    frame = settings.frame_prefix + settings.base_frame
    T_base_world = inverse_transform(state.frame_pose(settings.base_frame))
    p_world = np.array([state.frame_pose(f)[:3, 3] for f in base.contact_frames]).reshape(-1, 3)
    com_world = rnea.center_of_mass(model, state) if model.total_mass > 0 else \
        state.frame_pose(settings.base_frame)[:3, 3]
    corners, com_ground, inside = support_polygon(p_world, com_world, state.settings.gravity)
    to_base = T_base_world[:3, :3]
    corners_base = corners @ to_base.T + T_base_world[:3, 3]
    com_base = to_base @ com_ground + T_base_world[:3, 3]
    up_base = to_base @ up_direction(state.settings.gravity)
    check_finite('support polygon', corners_base, com_base)
    polygon = make_marker(frame, stamp, 0, SUPPORT_NS, Marker.LINE_STRIP, (0.1, 0.8, 0.3, 0.9))
    if len(corners_base) >= 2:
        ring = list(corners_base) + ([corners_base[0]] if len(corners_base) >= 3 else [])
        polygon.points = [_point(p) for p in ring]
        polygon.scale.x = 0.01
    else:
        polygon.action = Marker.DELETE          # a line needs two points
    disc = make_marker(frame, stamp, 0, PROJECTION_NS, Marker.CYLINDER,
                       (0.1, 0.9, 0.1, 0.9) if inside else (0.9, 0.1, 0.1, 0.9))
    disc.pose.position = _point(com_base)
    x, y, z, w = _quat_z_to(up_base)
    disc.pose.orientation.x, disc.pose.orientation.y = x, y
    disc.pose.orientation.z, disc.pose.orientation.w = z, w
    disc.scale.x = disc.scale.y = 0.04
    disc.scale.z = 0.002
    return [polygon, disc]


def _point(p):
    return Point(x=float(p[0]), y=float(p[1]), z=float(p[2]))


def _quat_z_to(axis):
    """Quaternion x, y, z, w turning z onto the unit vector ``axis``."""
    z = np.array([0.0, 0.0, 1.0])
    w = 1.0 + float(z @ axis)
    if w < 1e-9:                             # opposite: half a turn about x
        return 1.0, 0.0, 0.0, 0.0
    v = np.cross(z, axis)
    q = np.array([v[0], v[1], v[2], w])
    q /= np.linalg.norm(q)
    return tuple(float(c) for c in q)
