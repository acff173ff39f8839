"""Inverse dynamics of many states in one call (a trajectory): RNEA with the states last.

:mod:`.rnea` vectorises over bodies with the batch as leading axes, which is lean for one state;
for thousands of states it spends its time in numpy's stacked 3x3 products. This is the classic
body-frame recursive Newton-Euler algorithm (Featherstone, *Rigid Body Dynamics Algorithms*,
2008, table 5.1) with every quantity stored component-major and the states on the last,
contiguous axis: a body's velocity and acceleration are one ``(6, 2, N)`` array. Each step is
then one BLAS product with a constant 6x6 matrix or an elementwise pass over N numbers.

Each body is computed in its joint's z-aligned frame (:mod:`.joints`): its URDF link frame turned
by a constant rotation that brings the joint axis onto z. A joint then is a constant placement
(``Model.joint_z_placement``) followed by its joint model's motion along z, whose effect on
a spatial vector is a handful of elementwise products with ``cos q`` and ``sin q``
(:meth:`~ros_dynamics.engine.joints.JointModel.propagate_motion`,
:meth:`~ros_dynamics.engine.joints.JointModel.transmit_force`). Joint torques do not depend on
the frames chosen.
"""
from __future__ import annotations

import threading
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike

from .rnea import friction_torques
from .spatial import adjoint, inverse_transform, spatial_inertia

if TYPE_CHECKING:
    from .model import Model

#: States per chunk: the arrays of a chunk (one (6, 2, N) block per body) stay in the CPU
#: caches and are reused from chunk to chunk.
CHUNK = 1024


_workspace = threading.local()


def _buffer(name, shape):
    """A scratch array kept per thread: the chunk arrays are reused from call to call, as
    Pinocchio reuses its ``Data``, instead of being fetched fresh from the OS every time.
    """
    buffers = _workspace.__dict__.setdefault('buffers', {})
    array = buffers.get((name, shape))
    if array is None:
        if len(buffers) >= 12:          # chunk shapes of many different calls: start afresh
            buffers.clear()
        array = buffers[(name, shape)] = np.empty(shape)
    return array


class _Geometry:
    """The model's constant joint data in the layout of the kernel (a few arrays per call)."""

    def __init__(self, model):
        self.joints = model.joint_models
        self.parent = model.joint_parent_body - 1        # parent joint; -1 = the fixed base
        #: Motion transform (n, 6, 6) from the parent's z-aligned frame to joint k's at q = 0,
        #: and its transpose, which carries forces back.
        self.motion = adjoint(inverse_transform(model.joint_z_placement))
        self.force = np.ascontiguousarray(np.swapaxes(self.motion, 1, 2))
        self.frame_rotation = model.joint_z_rotation     # z-aligned frame in link frame

    def inertias(self, settings):
        """Spatial inertias (n_moving, 6, 6) of the moving bodies in their z-aligned frames."""
        A = self.frame_rotation
        com = np.einsum('kji,kj->ki', A, settings.body_com[1:])
        inertia = np.swapaxes(A, 1, 2) @ settings.body_inertia[1:] @ A
        return spatial_inertia(settings.body_mass[1:], com, inertia)


def min_states(model: Model):
    """Batch size from which this beats :mod:`.rnea` (measured: 8 states of a 7-DOF arm,
    about 30 of a 32-DOF humanoid): its cost per call grows with the joints, not the states.
    """
    return 2 * model.n_moving


def inverse_dynamics(model: Model, q: ArrayLike, qd: ArrayLike, qdd: ArrayLike, *,
                     friction: bool = False):
    """Torques (B, nq) for validated states ``q``, ``qd``, ``qdd`` of shape (B, nq)."""
    geometry = _Geometry(model)
    settings = model.settings
    inertia = geometry.inertias(settings)
    base = np.zeros((6, 2, 1))
    base[:3, 1, 0] = -settings.gravity      # gravity as an upward acceleration of the base
    tau = np.empty((q.shape[0], model.n_moving))
    for start in range(0, q.shape[0], CHUNK):
        s = slice(start, start + CHUNK)
        N = len(q[s])
        # Joint values of the chunk as contiguous rows (moving joints, mimics included).
        joints = _buffer('joints', (5, model.n_moving, N))
        joints[0] = model.joint_positions(q[s]).T
        joints[1] = model.joint_velocities(qd[s]).T
        joints[2] = model.joint_velocities(qdd[s]).T
        np.cos(joints[0], out=joints[3])
        np.sin(joints[0], out=joints[4])
        tau[s] = _chunk(geometry, inertia, base, joints).T
    tau = model.to_independent_forces(tau)
    tau += settings.rotor_inertia * qdd
    if friction:
        tau += friction_torques(settings, qd)
    return tau


def _chunk(geometry, inertia, base, joints):
    """Newton-Euler for N states, joint values ``joints`` (5, n_moving, N): q, qd, qdd, cos q,
    sin q. Returns tau (n_moving, N) of every moving joint.
    """
    q, qd, qdd, cos, sin = joints
    n, N = q.shape
    scratch = _buffer('scratch', (2, 2, 2, N))
    minus_sin = np.negative(sin, out=_buffer('minus_sin', (n, N)))
    # Velocity and acceleration of every body in its z-aligned frame: VA[k][:, 0] = [v; w],
    # VA[k][:, 1] = [a; alpha] (spatial, at the frame origin).
    VA = _buffer('VA', (n, 6, 2, N))
    for k in range(n):
        parent = geometry.parent[k]
        va = VA[k]
        if parent < 0:
            va[...] = (geometry.motion[k] @ base.reshape(6, 2))[:, :, None]
        else:
            np.matmul(geometry.motion[k], VA[parent].reshape(6, 2 * N),
                      out=va.reshape(6, 2 * N))
        geometry.joints[k].propagate_motion(va, q[k], cos[k], minus_sin[k], qd[k], qdd[k],
                                            scratch)

    # Body forces f = I a + v x* (I v), all bodies at once.
    h = _buffer('h', (n, 6, 2, N))
    np.matmul(inertia, VA.reshape(n, 6, 2 * N), out=h.reshape(n, 6, 2 * N))
    v, w = VA[:, :3, 0], VA[:, 3:, 0]
    h_lin, h_ang = h[:, :3, 0], h[:, 3:, 0]
    f = _buffer('f', (n, 6, N))
    f[...] = h[:, :, 1]
    product = _buffer('cross', (n, 3, N))
    f[:, :3] += _cross(w, h_lin, product)
    f[:, 3:] += _cross(v, h_lin, product)
    f[:, 3:] += _cross(w, h_ang, product)

    # Forces summed from the leaves to the root; each joint takes its axis' component.
    tau = np.empty((n, N))
    transmitted = _buffer('transmitted', (6, N))
    for k in range(n - 1, -1, -1):
        fk = f[k]
        joint = geometry.joints[k]
        tau[k] = fk[joint.motion_row]
        parent = geometry.parent[k]
        if parent < 0:
            continue
        joint.transmit_force(fk, q[k], cos[k], sin[k], scratch)
        np.matmul(geometry.force[k], fk, out=transmitted)
        f[parent] += transmitted
    return tau


def _cross(a, b, out):
    """Cross product over axis 1 of ``(n, 3, N)`` arrays, into ``out``."""
    a0, a1, a2 = a[:, 0], a[:, 1], a[:, 2]
    b0, b1, b2 = b[:, 0], b[:, 1], b[:, 2]
    t = _buffer('cross_scratch', a0.shape)
    for i, (x, y, z, w) in enumerate(((a1, b2, a2, b1), (a2, b0, a0, b2), (a0, b1, a1, b0))):
        np.multiply(x, y, out=out[:, i])
        np.multiply(z, w, out=t)
        out[:, i] -= t
    return out
