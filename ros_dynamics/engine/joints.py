"""Joint models: one class per joint type, the only place that knows how a type moves.

A joint is described in its *z-aligned frame*: the child link frame turned by a constant rotation
``A`` (:func:`~ros_dynamics.engine.rotations.matrix_z_to`) so that the joint axis is z. There a
one-degree-of-freedom joint at position ``x`` is a transform ``Z(x)`` that is linear in the four
terms ``[cos x, sin x, 1, x]`` -- ``Z(x) = sum_i term_i(x) * transform_terms[i]`` -- and moves
along the constant motion subspace ``motion_z`` (a 6-vector ``[linear; angular]``):

* revolute and continuous: a turn about z, ``motion_z = [0, 0, 0, 0, 0, 1]``;
* prismatic: a shift along z, ``motion_z = [0, 0, 1, 0, 0, 0]``.

Kinematics, dynamics and IK read a model's joints only through these: the model folds the
constant placements into the coefficient tensors once (``Model.joint_transform_basis``,
``joint_motion``, ``joint_z_placement``), the trajectory kernel calls
:meth:`JointModel.propagate_motion` and :meth:`JointModel.transmit_force`, and configuration
handling (bounds, sampling) goes through :meth:`JointModel.position_bounds` and friends. ``nq``
and ``nv`` are the sizes of a joint's configuration and velocity.

Joints with several degrees of freedom (:class:`FreeFlyerJoint` for URDF ``floating`` joints and
a floating base, :class:`PlanarJoint`) are no such linear form: each computes its transform
``T_joint_child(q)`` from its ``nq`` numbers (:meth:`MultiDofJoint.transform`), moves along the
``nv`` columns of a constant motion subspace in the child frame (its z-aligned frame is the child
frame itself), and owns its configuration space -- :meth:`~MultiDofJoint.neutral`,
:meth:`~MultiDofJoint.integrate`, :meth:`~MultiDofJoint.difference`,
:meth:`~MultiDofJoint.random`, :meth:`~MultiDofJoint.normalized` -- with Pinocchio's conventions
(``JointModelFreeFlyer``, ``JointModelPlanar``) so results compare one to one. Their unit
vectors (a quaternion, a (cos, sin) pair) are normalised where a configuration enters the
engine (:func:`~ros_dynamics.engine.kinematics.as_configuration`), so :meth:`transform` and the
others take unit ones.
"""
from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from .rotations import matrix_from_quat_xyzw
from .spatial import exp_se3, log_se3

#: Index of the terms of :attr:`JointModel.transform_terms`.
COS, SIN, ONE, X = range(4)


def _terms(**entries):
    out = np.zeros((4, 4, 4))
    for key, cells in entries.items():
        for (row, col), value in cells.items():
            out[{'cos': COS, 'sin': SIN, 'one': ONE, 'x': X}[key], row, col] = value
    out.setflags(write=False)
    return out


def _frozen(values):
    out = np.array(values, dtype=float)
    out.setflags(write=False)
    return out


def rotate_z(x: ArrayLike, cos: np.ndarray, sin: np.ndarray, scratch: np.ndarray):
    """Rotate the 3-vectors ``x`` (2, 3, ..., N) about z by the angle of (cos, sin), in place."""
    x0, x1 = x[:, 0], x[:, 1]
    t, u = scratch
    np.multiply(x0, cos, out=t)
    np.multiply(x1, sin, out=u)
    t -= u
    np.multiply(x0, sin, out=u)
    x1 *= cos
    x1 += u
    x0[...] = t


class JointModel:
    """A joint type with one degree of freedom (see the module docstring)."""

    type: str = ''
    nq: int = 1
    nv: int = 1
    #: Suffixes naming the configuration and velocity coordinates of a multi-DOF joint
    #: (``root_joint_qw``); a one-DOF joint's only coordinate carries the joint's name.
    q_coordinates: tuple = ('',)
    v_coordinates: tuple = ('',)
    #: (4, 4, 4): ``Z(x)`` as coefficients of ``[cos x, sin x, 1, x]``.
    transform_terms: np.ndarray
    #: (6,): motion subspace ``[linear; angular]`` in the z-aligned frame.
    motion_z: np.ndarray
    #: Index (2 or 5) of the one non-zero entry of :attr:`motion_z`.
    motion_row: int
    #: True when the position is an angle [rad] (a turn brings the joint back), else [m].
    angular: bool

    @property
    def motion_subspace(self) -> np.ndarray:
        """(nv, 6): the motion ``[linear; angular]`` of each velocity coordinate in the
        z-aligned frame.
        """
        return self.motion_z[None]

    def position_bounds(self, lower: float, upper: float) -> tuple[list, list]:
        """Bounds (nq values each) [rad or m] a position is kept in (the URDF limits; none when
        unbounded).
        """
        return [lower], [upper]

    def sampling_bounds(self, lower: float, upper: float) -> tuple[list, list]:
        """Finite range (nq values each) [rad or m] random configurations are drawn from: the
        limits where they are finite, else one turn, ``[-pi, pi]``.
        """
        (lo,), (hi,) = self.position_bounds(lower, upper)
        return [lo if np.isfinite(lo) else -np.pi], [hi if np.isfinite(hi) else np.pi]

    @property
    def angular_coordinates(self) -> tuple:
        """Per configuration coordinate: True when it is an angle (a turn brings it back)."""
        return (self.angular,)

    def propagate_motion(self, va, x, cos, minus_sin, qd, qdd, scratch):
        """Trajectory kernel (:mod:`~ros_dynamics.engine.rnea_batch`), forward pass: turn the
        parent's velocity and acceleration ``va`` (6, 2, N), already expressed in this joint's
        z-aligned frame at ``x = 0``, through ``Z(x)`` and add the joint's own motion, in place.
        """
        raise NotImplementedError

    def transmit_force(self, f, x, cos, sin, scratch):
        """Trajectory kernel, backward pass: the force ``f`` (6, N) of this joint's subtree,
        in its z-aligned frame, expressed in that frame at ``x = 0``, in place.
        """
        raise NotImplementedError


class RevoluteJoint(JointModel):
    """A turn about the axis, within position limits [rad]."""

    type = 'revolute'
    transform_terms = _terms(cos={(0, 0): 1.0, (1, 1): 1.0}, sin={(0, 1): -1.0, (1, 0): 1.0},
                             one={(2, 2): 1.0, (3, 3): 1.0})
    motion_z = _frozen([0, 0, 0, 0, 0, 1])
    motion_row = 5
    angular = True

    def propagate_motion(self, va, x, cos, minus_sin, qd, qdd, scratch):
        """A turn about z: rotate by ``R_z(x)^T``, add ``qd``/``qdd`` about z."""
        vectors = va.reshape(2, 3, 2, -1)
        rotate_z(vectors, cos, minus_sin, scratch)     # into the joint's frame: R_z(x)^T
        va[5, 0] += qd
        va[5, 1] += qdd
        # + v x S qd with S = [0; e_z]: [v x e_z; w x e_z] qd.
        t = scratch[0, 0, 0]
        for part in (0, 1):
            np.multiply(vectors[part, 1, 0], qd, out=t)
            vectors[part, 0, 1] += t
            np.multiply(vectors[part, 0, 0], qd, out=t)
            vectors[part, 1, 1] -= t

    def transmit_force(self, f, x, cos, sin, scratch):
        """A turn about z: rotate by ``R_z(x)``."""
        rotate_z(f.reshape(2, 3, -1), cos, sin, scratch[:, 0])


class ContinuousJoint(RevoluteJoint):
    """A turn about the axis without position limits [rad]."""

    type = 'continuous'

    def position_bounds(self, lower, upper):
        """No bounds: the URDF limits of a continuous joint are ignored."""
        return [-np.inf], [np.inf]


class PrismaticJoint(JointModel):
    """A shift along the axis, within position limits [m]."""

    type = 'prismatic'
    transform_terms = _terms(one={(0, 0): 1.0, (1, 1): 1.0, (2, 2): 1.0, (3, 3): 1.0},
                             x={(2, 3): 1.0})
    motion_z = _frozen([0, 0, 1, 0, 0, 0])
    motion_row = 2
    angular = False

    def propagate_motion(self, va, x, cos, minus_sin, qd, qdd, scratch):
        """A shift along z: move the reference point by ``x e_z``, add ``qd``/``qdd`` along z."""
        t = scratch[0, 0, 0]
        # Translation by d = x e_z: v += w x d.
        for i in (0, 1):
            np.multiply(va[4, i], x, out=t)
            va[0, i] += t
            np.multiply(va[3, i], x, out=t)
            va[1, i] -= t
        va[2, 0] += qd
        va[2, 1] += qdd
        # + v x S qd with S = [e_z; 0]: [w x e_z; 0] qd.
        np.multiply(va[4, 0], qd, out=t)
        va[0, 1] += t
        np.multiply(va[3, 0], qd, out=t)
        va[1, 1] -= t

    def transmit_force(self, f, x, cos, sin, scratch):
        """A shift along z: move the moment's reference point back by ``x e_z``."""
        t = scratch[0, 0, 0]
        np.multiply(f[1], x, out=t)
        f[3] -= t
        np.multiply(f[0], x, out=t)
        f[4] += t


class MultiDofJoint(JointModel):
    """A joint with several degrees of freedom: its own transform and configuration space.

    Arrays take leading batch dimensions: ``q`` (..., nq), ``v`` (..., nv).
    """

    angular = False
    #: (nv, 6): the motion ``[linear; angular]`` of each velocity coordinate in the child frame.
    motion: np.ndarray
    #: (nq,): the configuration at rest.
    neutral_q: np.ndarray
    #: (nq,): True for the coordinates of a unit vector (a quaternion, a (cos, sin) pair) ...
    unit_coordinates: tuple
    #: ... which are these (a slice of the joint's coordinates) and what it is called.
    unit_part: slice
    unit_name: str
    #: Half width [m] of the box random translations are drawn from (the joint has no limits).
    SAMPLING_HALF_WIDTH = 1.0

    @property
    def motion_subspace(self):
        """(nv, 6): :attr:`motion` (the z-aligned frame of a multi-DOF joint is its child
        frame).
        """
        return self.motion

    @property
    def angular_coordinates(self):
        """No coordinate of a multi-DOF joint is an angle that wraps by itself."""
        return (False,) * self.nq

    def position_bounds(self, lower, upper):
        """The URDF limits of a multi-DOF joint are ignored (as Pinocchio does): translations
        are unbounded, unit-vector components lie in [-1, 1].
        """
        unit = np.array(self.unit_coordinates)
        return np.where(unit, -1.0, -np.inf).tolist(), np.where(unit, 1.0, np.inf).tolist()

    def sampling_bounds(self, lower, upper):
        """Translations from +-:data:`SAMPLING_HALF_WIDTH`; the rotation is drawn uniformly
        by :meth:`random` (these bounds only describe its range).
        """
        lo, hi = self.position_bounds(lower, upper)
        w = self.SAMPLING_HALF_WIDTH
        return np.maximum(lo, -w).tolist(), np.minimum(hi, w).tolist()

    def neutral(self) -> np.ndarray:
        """The configuration (nq,) at rest: identity placement."""
        return self.neutral_q.copy()


class FreeFlyerJoint(MultiDofJoint):
    """Six degrees of freedom (URDF ``floating``; a floating base), Pinocchio's free flyer.

    ``q = [x, y, z, qx, qy, qz, qw]``: the child frame's origin [m] and orientation (unit
    quaternion, ROS order) in the joint frame; ``v = [v; w]`` [m/s, rad/s]: the child frame's
    linear velocity and angular velocity in its own axes (the body twist).
    """

    type = 'floating'
    nq, nv = 7, 6
    q_coordinates = ('x', 'y', 'z', 'qx', 'qy', 'qz', 'qw')
    v_coordinates = ('vx', 'vy', 'vz', 'wx', 'wy', 'wz')
    unit_coordinates = (False, False, False, True, True, True, True)
    unit_part, unit_name = slice(3, 7), 'quaternion'
    motion = _frozen(np.eye(6))
    neutral_q = _frozen([0, 0, 0, 0, 0, 0, 1])

    def transform(self, q):
        """``T_joint_child`` (..., 4, 4) for a normalised ``q`` (..., 7)."""
        T = np.zeros(q.shape[:-1] + (4, 4))
        T[..., :3, :3] = matrix_from_quat_xyzw(q[..., 3:])
        T[..., :3, 3] = q[..., :3]
        T[..., 3, 3] = 1.0
        return T

    def integrate(self, q, v):
        """``q`` moved by the body twist ``v`` for unit time: ``T(q) exp(v)`` on SE(3), the
        quaternion multiplied by the increment's (so it changes sign continuously).
        """
        T = self.transform(q) @ exp_se3(v)
        w = v[..., 3:]
        angle = np.linalg.norm(w, axis=-1)
        dq = np.concatenate([0.5 * np.sinc(angle[..., None] / (2 * np.pi)) * w,
                             np.cos(0.5 * angle)[..., None]], axis=-1)
        quat = _quat_xyzw_product(q[..., 3:], dq)
        quat /= np.linalg.norm(quat, axis=-1, keepdims=True)
        return np.concatenate([T[..., :3, 3], quat], axis=-1)

    def difference(self, q0, q1):
        """The body twist (..., 6) moving ``q0`` to ``q1`` in unit time: ``log(T0^-1 T1)``."""
        T0, T1 = self.transform(q0), self.transform(q1)
        R0t = np.swapaxes(T0[..., :3, :3], -1, -2)
        T = np.zeros(T0.shape)
        T[..., :3, :3] = R0t @ T1[..., :3, :3]
        T[..., :3, 3] = (R0t @ (T1[..., :3, 3] - T0[..., :3, 3])[..., None])[..., 0]
        T[..., 3, 3] = 1.0
        return log_se3(T)

    def random(self, rng, lower, upper, shape):
        """Translations uniform in ``[lower, upper]`` (..., 3), orientations uniform on SO(3)."""
        quat = rng.normal(size=shape + (4,))
        quat /= np.linalg.norm(quat, axis=-1, keepdims=True)
        return np.concatenate([rng.uniform(lower[:3], upper[:3], size=shape + (3,)), quat],
                              axis=-1)


class PlanarJoint(MultiDofJoint):
    """Motion in the joint frame's x-y plane (URDF ``planar``), Pinocchio's planar joint.

    ``q = [x, y, cos(theta), sin(theta)]``: the child origin [m] and its turn about z;
    ``v = [vx, vy, wz]`` [m/s, rad/s] in the child frame's axes. Like Pinocchio, the plane is
    always the joint frame's x-y plane, whatever the URDF ``<axis>``.
    """

    type = 'planar'
    nq, nv = 4, 3
    q_coordinates = ('x', 'y', 'cos', 'sin')
    v_coordinates = ('vx', 'vy', 'wz')
    unit_coordinates = (False, False, True, True)
    unit_part, unit_name = slice(2, 4), '(cos, sin) pair'
    motion = _frozen([[1, 0, 0, 0, 0, 0], [0, 1, 0, 0, 0, 0], [0, 0, 0, 0, 0, 1]])
    neutral_q = _frozen([0, 0, 1, 0])

    def transform(self, q):
        """``T_joint_child`` (..., 4, 4) for a normalised ``q`` (..., 4)."""
        c, s = q[..., 2], q[..., 3]
        T = np.zeros(q.shape[:-1] + (4, 4))
        T[..., 0, 0] = T[..., 1, 1] = c
        T[..., 0, 1] = -s
        T[..., 1, 0] = s
        T[..., 0, 3] = q[..., 0]
        T[..., 1, 3] = q[..., 1]
        T[..., 2, 2] = T[..., 3, 3] = 1.0
        return T

    def integrate(self, q, v):
        """``q`` moved by ``v`` for unit time: ``T(q) exp(v)`` on SE(2)."""
        a, b = _se2_left_jacobian(v[..., 2])
        c, s = q[..., 2], q[..., 3]
        dx = a * v[..., 0] - b * v[..., 1]
        dy = b * v[..., 0] + a * v[..., 1]
        dc, ds = np.cos(v[..., 2]), np.sin(v[..., 2])
        return np.stack([q[..., 0] + c * dx - s * dy, q[..., 1] + s * dx + c * dy,
                         c * dc - s * ds, s * dc + c * ds], axis=-1)

    def difference(self, q0, q1):
        """The velocity (..., 3) moving ``q0`` to ``q1`` in unit time: ``log(T0^-1 T1)``."""
        c0, s0, c1, s1 = q0[..., 2], q0[..., 3], q1[..., 2], q1[..., 3]
        theta = np.arctan2(c0 * s1 - s0 * c1, c0 * c1 + s0 * s1)
        px, py = q1[..., 0] - q0[..., 0], q1[..., 1] - q0[..., 1]
        x, y = c0 * px + s0 * py, -s0 * px + c0 * py       # in the frame of q0
        a, b = _se2_left_jacobian(theta)
        norm = a * a + b * b
        return np.stack([(a * x + b * y) / norm, (-b * x + a * y) / norm, theta], axis=-1)

    def random(self, rng, lower, upper, shape):
        """Translations uniform in ``[lower, upper]`` (..., 2), the turn uniform in a turn."""
        theta = rng.uniform(-np.pi, np.pi, size=shape)
        return np.concatenate([rng.uniform(lower[:2], upper[:2], size=shape + (2,)),
                               np.stack([np.cos(theta), np.sin(theta)], axis=-1)], axis=-1)


def _se2_left_jacobian(theta):
    """``(sin t / t, (1 - cos t) / t)``: the exponential of SE(2) moves by
    ``[[a, -b], [b, a]] @ [vx, vy]`` when turning by ``t``.
    """
    half = np.sinc(theta / (2 * np.pi))                # sin(t/2) / (t/2)
    return np.sinc(theta / np.pi), 0.5 * theta * half * half


def _quat_xyzw_product(p, q):
    """Hamilton product ``p q`` of quaternions in (x, y, z, w) order, (..., 4)."""
    pv, pw, qv, qw = p[..., :3], p[..., 3:], q[..., :3], q[..., 3:]
    return np.concatenate([pw * qv + qw * pv + np.cross(pv, qv), pw * qw
                           - np.sum(pv * qv, axis=-1, keepdims=True)], axis=-1)


#: Smallest norm a quaternion or (cos, sin) pair in ``q`` may have before it is normalised.
MIN_UNIT_NORM = 1e-9


#: Joint type name (as URDF writes it) -> its model; ``fixed`` joints have none (they are folded
#: into their parent body).
JOINT_MODELS: dict[str, JointModel] = {
    cls.type: cls() for cls in (RevoluteJoint, ContinuousJoint, PrismaticJoint, FreeFlyerJoint,
                                PlanarJoint)}
#: Types of the joints with one degree of freedom (the linear form of the module docstring).
ONE_DOF_TYPES = ('revolute', 'continuous', 'prismatic')
