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

Joint types enter only through the model's joint-model arrays (each joint's transform as
coefficients of ``[cos x, sin x, 1, x]`` and its motion subspace; :mod:`.joints`), so this
module has no case per joint type.

All arrays take a leading batch dimension: ``q`` of shape ``(..., nq)`` gives results of shape
``(..., ...)``.
"""
from dataclasses import dataclass
import datetime

import numpy as np

from .exceptions import InvalidInputError, ShapeError
from .rotations import cross
from .spatial import cross_motion

CONVENTIONS = ('world', 'local_world_aligned', 'local')
#: Largest joint position, velocity or acceleration magnitude accepted: far beyond any robot
#: (URDFs write "unlimited" as limits of 1e16), and below where the products in the dynamics
#: (velocities squared, ~1e154) would overflow to Inf.
MAX_JOINT_VALUE = 1e100


def check_convention(expressed_in):
    """Raise :class:`InvalidInputError` unless ``expressed_in`` is one of :data:`CONVENTIONS`."""
    if expressed_in not in CONVENTIONS:
        raise InvalidInputError(f'expressed_in: expected one of {CONVENTIONS}, got '
                                f'{expressed_in!r}')


def as_finite_array(x, name):
    """``x`` as a float array of finite values of magnitude <= :data:`MAX_JOINT_VALUE`.

    Raises :class:`ShapeError` for ragged nesting and :class:`InvalidInputError` for what is not
    real numbers (complex, dates, strings, objects) or for NaN, Inf and huge values.
    """
    if isinstance(x, np.ndarray):
        kind = x.dtype.kind
    else:
        if isinstance(x, (str, bytes, datetime.date, datetime.timedelta)):
            kind = 'U'
        else:
            try:
                kind = np.asarray(x).dtype.kind
            except ValueError:
                raise ShapeError(f'{name}: expected a rectangular array of numbers, got ragged '
                                 'nesting') from None
    if kind not in 'biuf':
        raise InvalidInputError(f'{name}: expected real numbers, got values of dtype kind '
                                f'{kind!r} ({type(x).__name__})')
    try:
        x = np.asarray(x, dtype=float)
    except (TypeError, ValueError, OverflowError):
        raise InvalidInputError(f'{name}: expected real numbers of magnitude <= '
                                f'{MAX_JOINT_VALUE:g}') from None
    # One test catches NaN, Inf and magnitudes no joint reaches (they would overflow to Inf).
    if not np.all(np.abs(x) <= MAX_JOINT_VALUE):
        shown = x.tolist() if x.size < 50 else 'NaN/Inf or huge entries'
        raise InvalidInputError(f'{name}: expected finite values of magnitude <= '
                                f'{MAX_JOINT_VALUE:g}, got {shown}')
    return x


def as_joint_vector(model, x, name, batch_shape=None):
    """``x`` as a finite float array of shape ``(..., nq)`` (see :func:`as_finite_array`);
    :class:`ShapeError` for another last dimension or a batch shape that does not match.
    """
    x = as_finite_array(x, name)
    if x.ndim == 0 or x.shape[-1] != model.nq:
        got = x.shape[-1] if x.ndim else 'a scalar'
        raise ShapeError(f'{name}: expected {model.nq} values (one per joint of '
                         f'{list(model.joint_names)}), got {got} (shape {x.shape})')
    if batch_shape is not None and x.shape[:-1] != batch_shape:
        try:
            x = np.broadcast_to(x, batch_shape + (model.nq,))
        except ValueError:
            raise ShapeError(f'{name}: batch shape {x.shape[:-1]} does not match q\'s '
                             f'{batch_shape}') from None
    return x


class KinematicState:
    """Result of one forward-kinematics pass at ``q`` (and optionally ``qd``, ``qdd``).

    Attributes (``...`` is the batch shape of ``q``):
      q (..., nq); q_joint (..., n_moving), the positions of every moving joint, mimics included;
      T_world_body (..., n_bodies, 4, 4), the pose of every body (body 0 = the fixed base);
      S_world (..., n_moving, 6), each moving joint's motion subspace as a spatial vector in
      world.
    With qd: V_world_body (..., n_bodies, 6) spatial velocities; with qd and qdd:
    A_world_body (..., n_bodies, 6) spatial accelerations (gravity not included).
    """

    def __init__(self, model, q, qd=None, qdd=None, *, check=True, settings=None):
        # check=False skips input validation for hot loops that already hold a valid q.
        q = as_joint_vector(model, q, 'q') if check else q
        self.model = model
        #: The model's dynamic settings when this pass was computed (or the ``settings`` given,
        #: made for this model): the dynamics read from it, so every result of one pass uses
        #: the same settings.
        self.settings = model.settings if settings is None else _own_settings(model, settings)
        self.q = q
        self.batch_shape = q.shape[:-1]
        self.q_joint = model.joint_positions(q)
        self.T_world_body = _body_poses(model, self.q_joint)
        self._S_world = None
        self._axes = None
        self.qd = self.qd_joint = self.V_world_body = None
        self.qdd = self.qdd_joint = self.A_world_body = None
        if qd is not None:
            self.qd = as_joint_vector(model, qd, 'qd', self.batch_shape)
            self.qd_joint = model.joint_velocities(self.qd)
            self.V_world_body = model.path_sum(self.S_world * self.qd_joint[..., None])
        if qdd is not None:
            if qd is None:
                raise InvalidInputError('qdd given without qd')
            self.qdd = as_joint_vector(model, qdd, 'qdd', self.batch_shape)
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
        """Motion subspace of each moving joint, spatial in world, (..., n_moving, 6): the
        joint's motion ``[s_v; s_w]`` in its child frame (R, p) moved to the world origin,
        ``[R s_v + p x R s_w; R s_w]`` -- ``[p x z; z]`` for a revolute joint with world axis z,
        ``[z; 0]`` for a prismatic one.
        """
        if self._S_world is None:
            T = self.T_world_body[..., 1:, :, :]
            n = self.model.n_moving
            # Both halves of every joint's motion rotated into world at once: (..., n, 3, 2).
            Rs = T[..., :3, :3] @ self.model.joint_motion.reshape(n, 2, 3).transpose(0, 2, 1)
            linear, angular = Rs[..., 0], Rs[..., 1]
            self._S_world = np.concatenate([linear + cross(T[..., :3, 3], angular), angular],
                                           axis=-1)
        return self._S_world

    @property
    def S_dot_world(self):
        """Time derivative of :attr:`S_world` (needs qd): ``v_body x S`` (..., n_moving, 6)."""
        return cross_motion(self.V_world_body[..., 1:, :], self.S_world)

    def frame_pose(self, frame):
        """``T_world_frame`` (..., 4, 4) of a frame (name or index)."""
        f = self.model.frame_index(frame)
        return self.T_world_body[..., self.model.frame_body[f], :, :] @ \
            self.model.frame_placement[f]

    def frame_poses(self):
        """Poses of every frame, (..., n_frames, 4, 4), in :attr:`RobotModel.frame_names` order."""
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
            point = np.asarray(point, dtype=float)
            if point.shape[-1:] != (3,):
                raise ShapeError(f'point: expected 3 coordinates, got shape {point.shape}')
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


def _body_poses(model, q_joint):
    """``T_world_body`` (..., n_bodies, 4, 4) for the moving-joint positions ``q_joint``."""
    batch = q_joint.shape[:-1]
    n = model.n_moving
    # Every joint's transform T_parentbody_child at once: its terms times its basis.
    terms = np.empty(batch + (n, 1, 4))
    np.cos(q_joint, out=terms[..., 0, 0])
    np.sin(q_joint, out=terms[..., 0, 1])
    terms[..., 0, 2] = 1.0
    terms[..., 0, 3] = q_joint
    if model.uses_x_term:
        local = (terms @ model.joint_transform_basis).reshape(batch + (n, 4, 4))
    else:
        local = (terms[..., :3] @ model.joint_transform_basis[:, :3]).reshape(batch + (n, 4, 4))
    T = np.empty(batch + (model.n_bodies, 4, 4))
    T[..., 0, :, :] = np.eye(4)
    for k, parent in enumerate(model.joint_parent_body):
        np.matmul(T[..., parent, :, :], local[..., k, :, :], out=T[..., k + 1, :, :])
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


def relative_twist(state, frame_i, frame_j, observer, expressed_in):
    """Velocity (..., 3) [m/s] and angular velocity (..., 3) [rad/s] of ``frame_i`` relative to
    ``frame_j``, observed from ``observer`` (L) and expressed in ``expressed_in`` (K): the first
    half of :func:`relative_motion`, from a state computed with q and qd only.
    """
    if state.V_world_body is None:
        raise InvalidInputError('relative_twist needs q and qd')
    _, p_i, v_i, w_i = state.point_motion(frame_i)[:4]
    _, p_j, v_j, w_j = state.point_motion(frame_j)[:4]
    w_l = state.point_motion(observer)[3]
    R_k = state.frame_pose(expressed_in)[..., :3, :3]
    v = (v_i - v_j) - cross(w_l, p_i - p_j)
    return (np.einsum('...ji,...j->...i', R_k, v),
            np.einsum('...ji,...j->...i', R_k, w_i - w_j))


def relative_motion(state, frame_i, frame_j, observer, expressed_in):
    """:class:`RelativeMotion` of ``frame_i`` w.r.t. ``frame_j`` observed from ``observer`` (L),
    expressed in ``expressed_in`` (K), from a state computed with q, qd and qdd.

    Seen from a rotating frame L, derivatives pick up the transport terms:
    ``v_L = r' - w_L x r`` and ``a_L = r'' - 2 w_L x v_L - w_L' x r - w_L x (w_L x r)``.
    """
    if state.A_world_body is None:
        raise InvalidInputError('relative_motion needs q, qd and qdd')
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
