"""Forward kinematics: placements, velocities and accelerations of every body and frame.

One call of :func:`forward_kinematics` computes a :class:`KinematicState` -- the pose of every
body for ``q`` (and, when given, their spatial velocities and accelerations for ``qd``, ``qdd``).
Every other quantity (frame poses, Jacobians, dynamics) reads from it, so a node computes one pass
per joint state and derives all of its outputs from it.

Internally motions are *spatial* (Featherstone): 6-vectors ``[v_O; w]`` in world axes at the world
origin O, ``v_O`` being the velocity of the body point that is at O. Results are converted for
the user to one of three conventions (Pinocchio's), ``expressed_in``:

* ``'world'``: that spatial vector itself;
* ``'local_world_aligned'``: ``[v_p; w]`` with ``v_p`` the velocity of the frame origin (or of
  the given point), in world axes (the default: what "end-effector velocity" usually means);
* ``'local'``: ``[R^T v_p; R^T w]``, the same in the frame's own axes.

Joint types enter only through the model's joint-model arrays (each one-DOF joint's transform
as coefficients of ``[cos x, sin x, 1, x]``, the motion subspace of every degree of freedom;
:mod:`.joints`) and the transforms of its multi-DOF joints, so this module has no case per joint
type.

All arrays take a leading batch dimension: ``q`` of shape ``(..., nq)`` gives results of shape
``(..., ...)``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike

from .checks import MAX_VALUE, as_finite_array
from .exceptions import InvalidInputError, ShapeError
from .joints import MIN_UNIT_NORM
from .rotations import cross
from .spatial import cross_motion

if TYPE_CHECKING:
    from .model import Model

CONVENTIONS = ('world', 'local_world_aligned', 'local')
#: Largest joint position, velocity or acceleration magnitude accepted (see :mod:`.checks`).
MAX_JOINT_VALUE = MAX_VALUE
_EYE4 = np.eye(4)
_EYE4.setflags(write=False)


def _force_transform_map():
    """(36, 36): the force transform ``[[R, 0], [[p]x R, R]]`` of a pose, flattened, from its
    pose terms ``p_h[a] R[b, j]`` (``p_h = [p; 1]``, flattened (a, b, j)).
    """
    out = np.zeros((4, 3, 3, 6, 6))
    for b in range(3):
        for j in range(3):
            out[3, b, j, b, j] = out[3, b, j, 3 + b, 3 + j] = 1.0       # R
    for c, a, b in ((0, 1, 2), (1, 2, 0), (2, 0, 1)):                  # [p]x R
        for j in range(3):
            out[a, b, j, 3 + c, j] = 1.0
            out[b, a, j, 3 + c, j] = -1.0
    out.setflags(write=False)
    return out.reshape(36, 36)


_FORCE_TRANSFORM_MAP = _force_transform_map()


def pose_terms(T: ArrayLike):
    """Products ``p_h[a] R[b, j]`` (..., 36) of poses ``T`` (..., 4, 4), ``p_h = [p; 1]``,
    flattened (a, b, j): motion subspaces and force transforms are linear in them.
    """
    return (T[..., :, 3, None, None] * T[..., None, :3, :3]).reshape(T.shape[:-2] + (36,))


def check_convention(expressed_in: str):
    """Raise :class:`InvalidInputError` unless ``expressed_in`` is one of :data:`CONVENTIONS`."""
    if expressed_in not in CONVENTIONS:
        raise InvalidInputError(f'expressed_in: expected one of {CONVENTIONS}, got '
                                f'{expressed_in!r}')


def _coordinates(model, x, name, size, names, batch_shape):
    x = as_finite_array(x, name)
    if x.ndim == 0 or x.shape[-1] != size:
        got = x.shape[-1] if x.ndim else 'a scalar'
        shown = ', '.join(names[:40]) + (', ...' if len(names) > 40 else '')
        raise ShapeError(f'{name}: expected {size} values ([{shown}]), got {got} (shape '
                         f'{x.shape})')
    if batch_shape is not None and x.shape[:-1] != batch_shape:
        try:
            x = np.broadcast_to(x, batch_shape + (size,))
        except ValueError:
            raise ShapeError(f'{name}: batch shape {x.shape[:-1]} does not match q\'s '
                             f'{batch_shape}') from None
    return x


def as_configuration(model: Model, q: ArrayLike, name: str = 'q'):
    """``q`` as a finite float array of shape ``(..., nq)`` (see :func:`as_finite_array`),
    the unit vectors of floating and planar joints (quaternions, (cos, sin) pairs) normalised;
    :class:`ShapeError` for another last dimension, :class:`InvalidInputError` for a zero
    quaternion or pair.
    """
    q = _coordinates(model, q, name, model.nq, model.q_names, None)
    for k, joint, start, _ in model.multi_dof_joints:
        part = slice(start + joint.unit_part.start, start + joint.unit_part.stop)
        norm = np.linalg.norm(q[..., part], axis=-1, keepdims=True)
        if not np.all(norm >= MIN_UNIT_NORM):
            raise InvalidInputError(
                f'{name}[{part.start}:{part.stop}]: expected a non-zero {joint.unit_name} of '
                f'joint {model.moving_joint_names[k]!r}, got a norm of {float(np.min(norm)):.3g}')
        q = np.array(q)
        q[..., part] /= norm
    return q


def as_velocity(model: Model, v: ArrayLike, name: str, batch_shape: tuple | None = None):
    """``v`` (a velocity, acceleration or torque) as a finite float array of shape
    ``(..., nv)`` broadcast to ``batch_shape``; :class:`ShapeError` for another last dimension
    or a batch shape that does not match.
    """
    return _coordinates(model, v, name, model.nv, model.v_names, batch_shape)


class KinematicState:
    """Result of one forward-kinematics pass at ``q`` (and optionally ``qd``, ``qdd``).

    Attributes (``...`` is the batch shape of ``q``):
      q (..., nq), unit vectors normalised; q_joint (..., n_moving), the positions of every
      one-DOF moving joint, mimics included; T_world_body (..., n_bodies, 4, 4), the pose of
      every body (body 0 = the fixed base, or the world under a root joint); S_world (...,
      n_dof, 6), the motion subspace of every degree of freedom as a spatial vector in world.

    With qd (..., nv): qd_joint (..., n_dof), the rate of every degree of freedom, and
    V_world_body (..., n_bodies, 6) spatial velocities; with qd and qdd: A_world_body (...,
    n_bodies, 6) spatial accelerations (gravity not included).
    """

    def __init__(self, model, q, qd=None, qdd=None, *, check=True, settings=None):
        # check=False skips input validation for hot loops that already hold a valid q.
        q = as_configuration(model, q) if check else q
        self.model = model
        #: The model's dynamic settings when this pass was computed (or the ``settings`` given,
        #: made for this model): the dynamics read from it, so every result of one pass uses
        #: the same settings.
        self.settings = model.settings if settings is None else _own_settings(model, settings)
        self.q = q
        self.batch_shape = q.shape[:-1]
        self.q_joint = model.joint_positions(q)
        self.T_world_body = _body_poses(model, q, self.q_joint)
        self._S_world = None
        self._X_world_body = None
        self._axes = None
        self.qd = self.qd_joint = self.V_world_body = None
        self.qdd = self.qdd_joint = self.A_world_body = None
        if qd is not None:
            self.qd = as_velocity(model, qd, 'qd', self.batch_shape)
            self.qd_joint = model.joint_velocities(self.qd)
            self.V_world_body = model.path_sum(self.S_world * self.qd_joint[..., None])
        if qdd is not None:
            if qd is None:
                raise InvalidInputError('qdd given without qd')
            self.qdd = as_velocity(model, qdd, 'qdd', self.batch_shape)
            self.qdd_joint = model.joint_velocities(self.qdd)
            self.A_world_body = model.path_sum(
                self.S_world * self.qdd_joint[..., None]
                + self.S_dot_world * self.qd_joint[..., None])

    @property
    def joint_axes_world(self):
        """World axis (unit) and origin of every moving joint: two (..., n_moving, 3) arrays."""
        if self._axes is None:
            T = self.T_world_body[..., 1:, :, :]
            z = (T[..., :3, :3] @ self.model.joint_axis[:, :, None])[..., 0]
            self._axes = (z, T[..., :3, 3])
        return self._axes

    @property
    def S_world(self):
        """Motion subspace of each degree of freedom, spatial in world, (..., n_dof, 6): its
        motion ``[s_v; s_w]`` in its joint's child frame (R, p) moved to the world origin,
        ``[R s_v + p x R s_w; R s_w]`` -- ``[p x z; z]`` for a revolute joint with world axis z,
        ``[z; 0]`` for a prismatic one.
        """
        if self._S_world is None:
            self._S_world = self.motions_about()
        return self._S_world

    def motions_about(self, point=None):
        """Motion of each degree of freedom at unit rate (..., n_dof, 6), ``[v; w]`` in world
        axes with ``v`` the velocity of the body point at ``point`` (..., 3) (world
        coordinates; the world origin when None, which is :attr:`S_world`).

        Each row is linear in its body's pose terms ``p_h[a] R[b, j]`` (``p_h`` the position
        relative to ``point`` with a 1 appended): one product of them with the model's
        :attr:`~ros_dynamics.engine.model.Model.dof_motion_basis`.
        """
        T = self.T_world_dof
        p_h = T[..., :, 3]
        if point is not None:
            p_h = p_h.copy()
            p_h[..., :3] -= point[..., None, :]
        terms = (p_h[..., :, None, None] * T[..., None, :3, :3]).reshape(p_h.shape[:-1] + (1, 36))
        return (terms @ self.model.dof_motion_basis).reshape(p_h.shape[:-1] + (6,))

    def motions_at_joints(self):
        """Motion of each degree of freedom at unit rate (..., n_dof, 6) at its own joint's
        origin, in world axes: ``[R s_v; R s_w]`` (the pose terms of ``p_h = [0, 0, 0, 1]``).
        """
        T = self.T_world_dof
        shape = T.shape[:-2]
        R_flat = T[..., :3, :3].reshape(shape + (1, 9))
        return (R_flat @ self.model.dof_motion_basis[:, 27:, :]).reshape(shape + (6,))

    @property
    def X_world_body(self):
        """Force transform (..., n_bodies, 6, 6) of every body to world: a wrench ``[f; n]``
        in the body's axes about its origin is ``X @ [f; n] = [R f; p x R f + R n]`` in world
        about the world origin (one product of the pose terms).
        """
        if self._X_world_body is None:
            T = self.T_world_body
            self._X_world_body = (pose_terms(T) @ _FORCE_TRANSFORM_MAP).reshape(
                T.shape[:-2] + (6, 6))
        return self._X_world_body

    @property
    def T_world_dof(self):
        """Pose (..., n_dof, 4, 4) of the body each degree of freedom moves."""
        m = self.model
        if m.n_dof == m.n_moving:
            return self.T_world_body[..., 1:, :, :]
        return np.take(self.T_world_body, m.dof_body, axis=-3)

    def require(self, what, velocities=True, accelerations=False):
        """Raise :class:`InvalidInputError` naming ``what`` unless this pass was computed with
        velocities (qd) -- and accelerations (qdd) when asked.
        """
        if (velocities and self.V_world_body is None) or \
                (accelerations and self.A_world_body is None):
            needs = 'q, qd and qdd' if accelerations else 'q and qd'
            raise InvalidInputError(f'{what} needs {needs}')

    @property
    def S_dot_world(self):
        """Time derivative of :attr:`S_world` (needs qd): ``v_body x S`` (..., n_dof, 6), with
        ``v_body`` the velocity of the body the dof moves (its motion is fixed in that body).
        """
        m = self.model
        V = self.V_world_body[..., 1:, :] if m.n_dof == m.n_moving else \
            self.V_world_body[..., m.dof_body, :]
        return cross_motion(V, self.S_world)

    def frame_pose(self, frame):
        """``T_world_frame`` (..., 4, 4) of a frame (name or index)."""
        f = self.model.frame_index(frame)
        return self.T_world_body[..., self.model.frame_body[f], :, :] @ \
            self.model.frame_placement[f]

    def frame_poses(self):
        """Poses of every frame, (..., n_frames, 4, 4), in ``model.frame_names`` order."""
        m = self.model
        return self.T_world_body[..., m.frame_body, :, :] @ m.frame_placement

    def point_motion(self, frame, point=None):
        """Motion of a frame's origin (or of ``point``, fixed in the frame, in frame coordinates).

        Returns ``(T_world_frame, p, v_p, w, a_p, w_dot)``: the frame pose, the point's world
        position, velocity and classical acceleration, the angular velocity and acceleration,
        all in world axes (``v_p``, ``w`` need qd; ``a_p``, ``w_dot`` need qdd; else None).
        """
        m = self.model
        f = m.frame_index(frame)
        b = m.frame_body[f]
        T = self.frame_pose(f)
        p = T[..., :3, 3]
        if point is not None:
            point = as_finite_array(point, 'point')
            if point.shape[-1:] != (3,) or point.ndim - 1 > len(self.batch_shape) or \
                    point.shape[:-1] != self.batch_shape[len(self.batch_shape) + 1 - point.ndim:]:
                raise ShapeError(f'point: expected 3 coordinates (or one set per state of the '
                                 f'batch {self.batch_shape}), got shape {point.shape}')
            p = p + np.einsum('...ij,...j->...i', T[..., :3, :3], point)
        v_p = w = a_p = w_dot = None
        if self.V_world_body is not None:
            V = self.V_world_body[..., b, :]
            w = V[..., 3:]
            v_p = V[..., :3] + cross(w, p)
            if self.A_world_body is not None:
                A = self.A_world_body[..., b, :]
                w_dot = A[..., 3:]
                a_p = A[..., :3] + cross(w_dot, p) + cross(w, v_p)
        return T, p, v_p, w, a_p, w_dot


def forward_kinematics(model, q, qd=None, qdd=None, *, check=True, settings=None):
    """One kinematics pass; see :class:`KinematicState`. ``check=False`` skips the validation
    of ``q`` (shape, finiteness) for inner loops. ``settings``: dynamic settings made for this
    model (``model.make_settings(...)``) for the dynamics to read instead of the model's current
    ones, e.g. the model without its payload.
    """
    return KinematicState(model, q, qd, qdd, check=check, settings=settings)


def _own_settings(model, settings):
    """``settings`` if they were made for ``model``, else :class:`InvalidInputError`."""
    if getattr(settings, 'model_key', None) is not model.key:
        raise InvalidInputError('settings: expected DynamicSettings made for this model by '
                                f'model.make_settings(...), got {type(settings).__name__}')
    return settings


def _body_poses(model, q, q_joint):
    """``T_world_body`` (..., n_bodies, 4, 4) for the configuration ``q`` and the one-DOF
    joints' positions ``q_joint``.

    Every joint's transform ``T_parentbody_child`` comes from one product (its terms times its
    basis); the chains of products from the root are then taken by pointer jumping
    (``model.pose_jumps``): after step s each body holds its pose in its 2^s-th
    ancestor, so a tree of depth d takes ceil(log2 d) batched products, not one per joint
    (bodies already placed in world are multiplied by the base's identity).
    """
    batch = q_joint.shape[:-1]
    n = model.n_moving
    terms = np.empty(batch + (n, 1, 4))
    np.cos(q_joint, out=terms[..., 0, 0])
    np.sin(q_joint, out=terms[..., 0, 1])
    terms[..., 0, 2] = 1.0
    T_flat = np.empty(batch + (model.n_bodies, 1, 16))
    T_flat[..., 0, 0, :] = _EYE4.reshape(16)
    if model.uses_x_term:
        terms[..., 0, 3] = q_joint
        np.matmul(terms, model.joint_transform_basis, out=T_flat[..., 1:, :, :])
    else:
        np.matmul(terms[..., :3], model.joint_transform_basis[:, :3], out=T_flat[..., 1:, :, :])
    T = T_flat.reshape(batch + (model.n_bodies, 4, 4))
    for k, joint, start, _ in model.multi_dof_joints:
        T[..., k + 1, :, :] = model.joint_placement[k] @ joint.transform(
            q[..., start:start + joint.nq])
    for jump in model.pose_jumps:
        if isinstance(jump, tuple):                 # a chain: consecutive ancestors
            first, ancestors = jump
            T[..., first:, :, :] = T[..., ancestors, :, :] @ T[..., first:, :, :]
        else:
            T = np.take(T, jump, axis=-3) @ T
    return T


@dataclass(frozen=True)
class RelativeMotion:
    """Motion of frame I relative to frame J, seen from frame L, in the axes of frame K.

    position (..., 3) [m]: from J's origin to I's origin. velocity, acceleration [m/s, m/s^2]:
    first and second time derivatives of that vector as observed in the moving frame L.
    angular_velocity (..., 3) [rad/s]: w_I - w_J. angular_acceleration [rad/s^2]: its time
    derivative as observed in L. All expressed in K's axes.
    """

    position: np.ndarray
    velocity: np.ndarray
    acceleration: np.ndarray
    angular_velocity: np.ndarray
    angular_acceleration: np.ndarray


def relative_twist(state: KinematicState, frame_i: str | int, frame_j: str | int,
                   observer: str | int, expressed_in: str):
    """Velocity (..., 3) [m/s] and angular velocity (..., 3) [rad/s] of ``frame_i`` relative to
    ``frame_j``, observed from ``observer`` (L) and expressed in ``expressed_in`` (K): the first
    half of :func:`relative_motion`, from a state computed with q and qd only.
    """
    state.require('relative_twist')
    _, p_i, v_i, w_i = state.point_motion(frame_i)[:4]
    _, p_j, v_j, w_j = state.point_motion(frame_j)[:4]
    w_l = state.point_motion(observer)[3]
    R_k = state.frame_pose(expressed_in)[..., :3, :3]
    v = (v_i - v_j) - cross(w_l, p_i - p_j)
    return (np.einsum('...ji,...j->...i', R_k, v),
            np.einsum('...ji,...j->...i', R_k, w_i - w_j))


def relative_motion(state: KinematicState, frame_i: str | int, frame_j: str | int,
                    observer: str | int, expressed_in: str):
    """:class:`RelativeMotion` of ``frame_i`` w.r.t. ``frame_j`` observed from ``observer`` (L),
    expressed in ``expressed_in`` (K), from a state computed with q, qd and qdd.

    Seen from a rotating frame L, derivatives pick up the transport terms:
    ``v_L = r' - w_L x r`` and ``a_L = r'' - 2 w_L x v_L - w_L' x r - w_L x (w_L x r)``.
    """
    state.require('relative_motion', accelerations=True)
    _, p_i, v_i, w_i, a_i, wd_i = state.point_motion(frame_i)
    _, p_j, v_j, w_j, a_j, wd_j = state.point_motion(frame_j)
    _, _, _, w_l, _, wd_l = state.point_motion(observer)
    R_k = state.frame_pose(expressed_in)[..., :3, :3]
    r = p_i - p_j
    v = (v_i - v_j) - cross(w_l, r)
    a = (a_i - a_j) - 2.0 * cross(w_l, v) - cross(wd_l, r) \
        - cross(w_l, cross(w_l, r))
    w_rel = w_i - w_j
    wd_rel = (wd_i - wd_j) - cross(w_l, w_rel)

    def in_k(x):
        return np.einsum('...ji,...j->...i', R_k, x)

    return RelativeMotion(in_k(r), in_k(v), in_k(a), in_k(w_rel), in_k(wd_rel))
