"""Joint models: one class per joint type, the only place that knows how a type moves.

A joint is described in its *z-aligned frame*: the child link frame turned by a constant rotation
``A`` (:func:`~ros_dynamics.engine.rotations.matrix_z_to`) so that the joint axis is z. There a
one-degree-of-freedom joint at position ``x`` is a transform ``Z(x)`` that is linear in the four
terms ``[cos x, sin x, 1, x]`` -- ``Z(x) = sum_i term_i(x) * transform_terms[i]`` -- and moves
along the constant motion subspace ``motion_z`` (a 6-vector ``[linear; angular]``):

* revolute and continuous: a turn about z, ``motion_z = [0, 0, 0, 0, 0, 1]``;
* prismatic: a shift along z, ``motion_z = [0, 0, 1, 0, 0, 0]``.

Kinematics, dynamics and IK read a model's joints only through these: the model folds the
constant placements into the coefficient tensors once (``RobotModel.joint_transform_basis``,
``joint_motion``, ``joint_z_placement``), the trajectory kernel calls
:meth:`JointModel.propagate_motion` and :meth:`JointModel.transmit_force`, and configuration
handling (bounds, sampling) goes through :meth:`JointModel.position_bounds` and friends. ``nq``
and ``nv`` are the sizes of a joint's configuration and velocity; joints whose configuration has
more numbers than their velocity (a floating base: 7 and 6) need their own placement and
integration, and join the registry :data:`JOINT_MODELS` as a class of their own.
"""

import numpy as np

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


def rotate_z(x, cos, sin, scratch):
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
    #: (4, 4, 4): ``Z(x)`` as coefficients of ``[cos x, sin x, 1, x]``.
    transform_terms: np.ndarray
    #: (6,): motion subspace ``[linear; angular]`` in the z-aligned frame.
    motion_z: np.ndarray
    #: Index (2 or 5) of the one non-zero entry of :attr:`motion_z`.
    motion_row: int
    #: True when the position is an angle [rad] (a turn brings the joint back), else [m].
    angular: bool

    def position_bounds(self, lower: float, upper: float) -> tuple[float, float]:
        """Bounds [rad or m] a position is kept in (the URDF limits; none when unbounded)."""
        return lower, upper

    def sampling_bounds(self, lower: float, upper: float) -> tuple[float, float]:
        """Finite range [rad or m] random configurations are drawn from: the limits where they
        are finite, else one turn, ``[-pi, pi]``.
        """
        lo, hi = self.position_bounds(lower, upper)
        return (lo if np.isfinite(lo) else -np.pi), (hi if np.isfinite(hi) else np.pi)

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
        return -np.inf, np.inf


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


#: Joint type name (as URDF writes it) -> its model; ``fixed`` joints have none (they are folded
#: into their parent body).
JOINT_MODELS: dict[str, JointModel] = {
    cls.type: cls() for cls in (RevoluteJoint, ContinuousJoint, PrismaticJoint)}
