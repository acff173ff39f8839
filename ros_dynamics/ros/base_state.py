"""The state of a floating or planar base, from ``nav_msgs/Odometry`` (no node here).

REP-105 / REP-103 odometry is the pose of ``child_frame_id`` (the base link) in
``header.frame_id`` (the odometry or world frame) and the twist in ``child_frame_id``'s axes:
exactly a free flyer's configuration ``[x, y, z, qx, qy, qz, qw]`` and velocity ``[v; w]``
(the root link's velocity in its own axes). A planar base takes ``x``, ``y`` and the yaw of the
pose (``q = [x, y, cos, sin]``) and ``[vx, vy, wz]`` of the twist; its orientation must be a
rotation about z (within :data:`QUATERNION_TOLERANCE`), its height is not read.

Every odometry is checked before any arithmetic (:func:`base_from_odometry`): frame ids (the
node's ``world_frame`` and the URDF root link, either with the node's frame prefix or without),
finite and bounded numbers (:data:`MAX_BASE_POSITION` [m], :data:`MAX_BASE_RATE` [m/s, rad/s]),
a unit quaternion within :data:`QUATERNION_TOLERANCE` (normalised then). The covariances are not
read. :func:`full_state` assembles the model's ``q`` (nq,) and ``v`` (nv,) from the actuated
joints' state and the base state.
"""
from dataclasses import dataclass
import math

import numpy as np

from .frame_names import FramePrefix

#: Largest |1 - norm| of a quaternion accepted (then normalised).
QUATERNION_TOLERANCE = 1e-3
#: Largest base coordinate accepted [m].
MAX_BASE_POSITION = 1e6
#: Largest base velocity component accepted [m/s, rad/s].
MAX_BASE_RATE = 1e4


class InvalidOdometry(ValueError):
    """An odometry message that must be dropped; the message says why."""


@dataclass(frozen=True, eq=False)
class BaseState:
    """Coordinates ``q`` and velocity ``v`` of the root joint (read-only arrays), and the
    monotonic time [s] the odometry they come from was received (None: the static base).
    """

    q: np.ndarray
    v: np.ndarray
    received: float = None

    def stale(self, timeout, now):
        """True when it comes from odometry older than ``timeout`` [s] at ``now`` (0: never)."""
        return self.received is not None and timeout > 0 and now - self.received > timeout


def root_coordinates(root_joint, p_world_base, quat_xyzw):
    """The root joint's coordinates of the base pose: 7 for 'floating', 4 for 'planar' (which
    raises :class:`InvalidOdometry` unless the rotation is about z). ``quat_xyzw`` is unit.
    """
    x, y, z = (float(c) for c in p_world_base)
    qx, qy, qz, qw = (float(c) for c in quat_xyzw)
    if root_joint == 'floating':
        return _read_only(np.array([x, y, z, qx, qy, qz, qw]))
    if abs(qx) > QUATERNION_TOLERANCE or abs(qy) > QUATERNION_TOLERANCE:
        raise InvalidOdometry(f'a planar base turns about z only; got the quaternion '
                              f'{[qx, qy, qz, qw]}')
    yaw = 2.0 * math.atan2(qz, qw)
    return _read_only(np.array([x, y, math.cos(yaw), math.sin(yaw)]))


def static_base(settings):
    """The :class:`BaseState` before any odometry: ``base_pose``, at rest."""
    q = settings.q_static
    return BaseState(q, _read_only(np.zeros(3 if settings.root_joint == 'planar' else 6)))


def base_from_odometry(msg, settings, root_link, frame_prefix, now):
    """The :class:`BaseState` of a ``nav_msgs/Odometry`` received at monotonic time ``now``
    [s], for a base with :class:`~ros_dynamics.ros.base_settings.BaseSettings` ``settings``
    whose root link is ``root_link``. Raises :class:`InvalidOdometry`.
    """
    prefix = FramePrefix(frame_prefix)
    world = prefix.to_frame(msg.header.frame_id)
    if world != settings.world_frame:
        raise InvalidOdometry(f'header.frame_id {msg.header.frame_id[:200]!r}: expected '
                              f'{prefix.to_frame_id(settings.world_frame)!r} (world_frame)')
    child = prefix.to_frame(msg.child_frame_id)
    if child != root_link:
        raise InvalidOdometry(f'child_frame_id {msg.child_frame_id[:200]!r}: expected the URDF '
                              f'root link {prefix.to_frame_id(root_link)!r}')
    p, o = msg.pose.pose.position, msg.pose.pose.orientation
    t = msg.twist.twist
    pose = (p.x, p.y, p.z, o.x, o.y, o.z, o.w)
    twist = (t.linear.x, t.linear.y, t.linear.z, t.angular.x, t.angular.y, t.angular.z)
    if not all(abs(c) <= MAX_BASE_POSITION for c in pose):        # False for NaN
        raise InvalidOdometry(f'pose: NaN, Inf or beyond {MAX_BASE_POSITION:g}')
    if not all(abs(c) <= MAX_BASE_RATE for c in twist):
        raise InvalidOdometry(f'twist: NaN, Inf or beyond {MAX_BASE_RATE:g}')
    norm = math.sqrt(sum(c * c for c in pose[3:]))
    if abs(norm - 1.0) > QUATERNION_TOLERANCE:
        raise InvalidOdometry(f'orientation: expected a unit quaternion (norm within '
                              f'{QUATERNION_TOLERANCE:g} of 1), got a norm of {norm:.6g}')
    q = root_coordinates(settings.root_joint, pose[:3], [c / norm for c in pose[3:]])
    v = twist if settings.root_joint == 'floating' else (twist[0], twist[1], twist[5])
    return BaseState(q, _read_only(np.array(v, dtype=float)), now)


def full_state(model, initial_q, q_actuated, v_actuated, base):
    """``q`` (nq,) and ``v`` (nv,) of ``model``: the actuated joints' positions and rates
    (new arrays), the root joint's from ``base`` (a :class:`BaseState`, or None), any other
    coordinate (floating or planar joints inside the tree) at ``initial_q``, at rest.
    """
    if not model.has_multi_dof:
        return q_actuated.copy(), v_actuated.copy()
    q = np.array(initial_q, dtype=float)
    v = np.zeros(model.nv)
    q[model.actuated_q_index] = q_actuated
    v[model.actuated_v_index] = v_actuated
    if base is not None and model.root_joint:
        q[:base.q.size] = base.q
        v[:base.v.size] = base.v
    return q, v


def _read_only(a):
    a.flags.writeable = False
    return a
