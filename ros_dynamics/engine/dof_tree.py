"""The degrees of freedom of a kinematic tree, and the sums and maps along it.

:class:`DofTree` is the part of a :class:`~ros_dynamics.engine.model.Model` the algorithms'
kernels read: every moving joint's model, placement and precomputed transform terms, the
degrees of freedom and the bodies they move, the pointer-jumping steps of the forward pass, and
the mimic maps between the degrees of freedom (``n_dof``, mimic joints included) and ``v``
(``nv``). It is built once, from an assembled tree (:func:`~ros_dynamics.engine.tree.assemble`),
by the model's constructor, and never written afterwards. It imports no algorithm.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from .joints import X as X_TERM
from .rotations import matrix_z_to

#: Largest number of degrees of freedom for which the model keeps dense tree-sum matrices.
DENSE_LIMIT = 1024
#: Paths from the root longer than this are stored as links to their parent's (linear memory).
_SHARED_PATHS = 64


class _Path:
    """A long root-to-body path: its parent body's path and one more joint."""

    __slots__ = ('parent', 'joint')

    def __init__(self, parent, joint):
        self.parent, self.joint = parent, joint

    def joints(self):
        out, path = [], self
        while isinstance(path, _Path):
            out.append(path.joint)
            path = path.parent
        return list(path) + out[::-1]


def frozen(a, dtype=float):
    """A read-only copy of ``a`` as an array of ``dtype``."""
    a = np.array(a, dtype=dtype)
    a.setflags(write=False)
    return a


def _motion_basis(motion):
    """(n, 36, 6) maps from pose terms ``p_h[a] R[b, j]`` to ``[R s_v + p x R s_w; R s_w]`` for
    motions ``[s_v; s_w]`` (n, 6) given in the body frame.
    """
    epsilon = np.zeros((3, 3, 3))                    # Levi-Civita: cross(x, y)_c = e_cab x_a y_b
    epsilon[0, 1, 2] = epsilon[1, 2, 0] = epsilon[2, 0, 1] = 1.0
    epsilon[0, 2, 1] = epsilon[2, 1, 0] = epsilon[1, 0, 2] = -1.0
    s_v, s_w = motion[:, :3], motion[:, 3:]
    basis = np.zeros((len(motion), 4, 3, 3, 6))      # (dof, a, b, j, row of the motion)
    basis[:, :3, :, :, :3] = np.einsum('cab,nj->nabjc', epsilon, s_w)    # p x R s_w
    eye = np.eye(3)
    basis[:, 3, :, :, :3] = np.einsum('bc,nj->nbjc', eye, s_v)          # R s_v
    basis[:, 3, :, :, 3:] = np.einsum('bc,nj->nbjc', eye, s_w)          # R s_w
    return basis.reshape(len(motion), 36, 6)


class DofTree:
    """Degrees of freedom of a kinematic tree (see the module docstring): a base of
    :class:`~ros_dynamics.engine.model.Model`, whose constructor calls :meth:`_init_joints`.
    """

    def _init_joints(self, topo):
        """Moving joints (mimic joints included), depth-first, through their joint models, and
        their degrees of freedom.
        """
        n = self.n_moving
        models = topo.models
        #: The :class:`~ros_dynamics.engine.joints.JointModel` of every moving joint.
        self.joint_models = models
        self.joint_parent_body = frozen(topo.parent_body, int)
        #: T_parentbody_child (n_moving, 4, 4): the child link frame at q = 0.
        self.joint_placement = frozen(topo.placement)
        self.joint_axis = frozen(topo.axis)
        #: Rotation (n_moving, 3, 3) from each joint's z-aligned frame (the child link frame
        #: turned so that the joint axis is z; the child frame itself for multi-DOF joints) to
        #: the child link frame.
        turns = {}                          # most joints share a few axes
        for a in map(tuple, topo.axis):
            if a not in turns:
                turns[a] = matrix_z_to(a)
        A = np.array([turns[a] for a in map(tuple, topo.axis)]).reshape(n, 3, 3)
        self.joint_z_rotation = frozen(A)
        Z = np.array([m.transform_terms if m.nq == 1 else np.zeros((4, 4, 4))
                      for m in models]).reshape(n, 4, 4, 4)
        A4 = np.zeros((n, 4, 4))
        A4[:, :3, :3], A4[:, 3, 3] = A, 1.0
        PA = topo.placement @ A4
        #: (n_moving, 4, 16): the transform T_parentbody_child(x) of a one-DOF joint is
        #: ``[cos x, sin x, 1, x] @ joint_transform_basis[k]`` (P A Z_i A^T, flattened); zero
        #: for multi-DOF joints (:attr:`multi_dof_joints`), which compute their own.
        self.joint_transform_basis = frozen(
            (PA[:, None] @ Z @ np.swapaxes(A4, 1, 2)[:, None]).reshape(n, 4, 16))
        #: False when no joint transform depends on ``x`` itself (no prismatic joints).
        self.uses_x_term = bool(np.any(self.joint_transform_basis[:, X_TERM]))
        #: T_parentz_jointz (n_moving, 4, 4): joint k's z-aligned frame at q = 0 in its parent
        #: joint's z-aligned frame (the world frame for joints on the fixed base) -- the
        #: constant part of a joint in the trajectory kernel and the IK chains.
        A_parent = np.concatenate([np.eye(4)[None], A4])[topo.parent_body]
        self.joint_z_placement = frozen(np.swapaxes(A_parent, 1, 2) @ PA)

        # Degrees of freedom: the velocity coordinates of every moving joint, joint by joint
        # (one per one-DOF joint: then dof k is moving joint k).
        nv = np.array([m.nv for m in models], dtype=int)
        #: Index of each moving joint's first degree of freedom (n_moving,).
        self.joint_dof_start = frozen(np.cumsum(nv) - nv, int)
        dof_joint = np.repeat(np.arange(n), nv)
        #: Number of degrees of freedom of the moving joints, mimic joints included.
        self.n_dof = len(dof_joint)
        #: Moving joint (n_dof,) and body it moves (n_dof,) of every degree of freedom.
        self.dof_joint = frozen(dof_joint, int)
        self.dof_body = frozen(dof_joint + 1, int)
        #: Motion subspace (n_dof, 6) ``[linear; angular]`` of each degree of freedom in its
        #: joint's child frame.
        motion = [m.motion_subspace.reshape(-1, 2, 3) @ A[k].T for k, m in enumerate(models)]
        self.dof_motion = frozen(np.concatenate(motion).reshape(-1, 6) if n else
                                  np.zeros((0, 6)))
        #: (n_dof, 36, 6): each degree of freedom's motion in world, ``[R s_v + p x R s_w;
        #: R s_w]`` for its body's pose (R, p), as a linear map of the body's pose terms
        #: ``p_h[a] R[b, j]`` (``p_h = [p; 1]``, flattened (a, b, j); see
        #: :attr:`~ros_dynamics.engine.kinematics.KinematicState.S_world`): one batched product.
        self.dof_motion_basis = frozen(_motion_basis(self.dof_motion))
        #: Pointer jumping over the tree (:func:`~ros_dynamics.engine.kinematics._body_poses`):
        #: step s maps every body to its 2^s-th ancestor (0, the base, past the root), so
        #: products of poses along every path take ceil(log2(depth)) steps. Each step is
        #: the ancestors of every body, a read-only index array, or, where the bodies that
        #: still move from some ``first`` on have consecutive ancestors (a chain),
        #: ``(first, slice of their ancestors)``, which needs no gather.
        ancestor = np.concatenate([[0], topo.parent_body]).astype(int)
        jumps = []
        while ancestor.any():
            first = int(np.argmax(ancestor > 0))
            moved = ancestor[first:]
            if np.array_equal(moved, moved[0] + np.arange(len(moved))):
                jumps.append((first, slice(int(moved[0]), int(moved[0]) + len(moved))))
            else:
                jumps.append(frozen(ancestor, int))
            ancestor = ancestor[ancestor]
        self.pose_jumps = tuple(jumps)
        #: Moving joints (root first) on the path from the root to each body.
        paths = [()]
        for k, parent in enumerate(topo.parent_body):
            up = paths[parent]
            paths.append(up + (k,) if isinstance(up, tuple) and len(up) < _SHARED_PATHS
                         else _Path(up, k))
        self._paths = tuple(paths)
        #: dof_moves_body[b, d] = 1 when degree of freedom d moves body b (n_bodies, n_dof):
        #: built for models of at most :data:`DENSE_LIMIT` degrees of freedom (the tree sums
        #: are then one matrix product each), None for larger ones (then they loop over the
        #: joints, so that memory and build time stay linear in size).
        self.dof_moves_body = None
        self._dense_ancestry = None
        if self.n_dof <= DENSE_LIMIT:
            moves = np.zeros((self.n_bodies, self.n_dof))
            for b in range(1, self.n_bodies):
                moves[b] = self.dof_mask(b)
            self.dof_moves_body = frozen(moves)
            self._dense_ancestry = tuple(frozen(a, a.dtype) for a in self.dof_ancestry())
        #: True when some joint has several degrees of freedom (a floating or planar joint).
        self.has_multi_dof = bool(self.n_dof != n)

    def joint_positions(self, q: np.ndarray) -> np.ndarray:
        """Positions (..., n_moving) of every one-DOF moving joint, mimic joints included
        (0 for multi-DOF joints).
        """
        if self.q_is_joint_positions:
            return q
        return q[..., self.joint_q_source] * self.joint_multiplier + self.joint_offset

    def joint_velocities(self, qd: np.ndarray) -> np.ndarray:
        """Rates (or accelerations) (..., n_dof) of every degree of freedom from ``v``
        (..., nv).
        """
        if not self.has_mimic:
            return qd
        return qd[..., self.dof_v_source] * self.dof_multiplier

    def rate_matrix(self, dofs: Optional[np.ndarray] = None) -> np.ndarray:
        """Rows ``dofs`` (all when None) of ``G`` (n_dof, nv): the rates of those degrees of
        freedom from ``v`` (a mimic joint's row holds its multiplier at its leader's column).
        """
        dofs = np.arange(self.n_dof) if dofs is None else np.asarray(dofs, dtype=int)
        G = np.zeros((len(dofs), self.nv))
        G[np.arange(len(dofs)), self.dof_v_source[dofs]] = self.dof_multiplier[dofs]
        return G

    def to_independent_columns(self, J: np.ndarray) -> np.ndarray:
        """Map columns over degrees of freedom (..., r, n_dof) to ``v`` (..., r, nv)."""
        return J @ self.mimic_matrix if self.has_mimic else J

    def to_independent_forces(self, tau_moving: np.ndarray) -> np.ndarray:
        """Map forces of every degree of freedom (..., n_dof) to those of ``v`` (..., nv)."""
        return tau_moving @ self.mimic_matrix if self.has_mimic else tau_moving

    def joints_moving_body(self, body: int) -> np.ndarray:
        """Moving joints (root first) on the path from the root to ``body``."""
        path = self._paths[body]
        return np.array(path.joints() if isinstance(path, _Path) else path, dtype=int)

    def dof_mask(self, body: int) -> np.ndarray:
        """(n_dof,) 1 for the degrees of freedom that move ``body``, else 0."""
        if self.dof_moves_body is not None:
            return self.dof_moves_body[body]
        mask = np.zeros(self.n_dof)
        mask[np.isin(self.dof_joint, self.joints_moving_body(body))] = 1.0
        return mask

    def moves_matrix(self) -> np.ndarray:
        """``moves[b, d]`` = 1 when degree of freedom d moves body b (n_bodies, n_dof): the
        kept :attr:`dof_moves_body`, or built for this call on a large model.
        """
        if self.dof_moves_body is not None:
            return self.dof_moves_body
        return np.array([self.dof_mask(b) for b in range(self.n_bodies)])

    def dof_ancestry(self) -> tuple[np.ndarray, np.ndarray]:
        """``ancestor[i, d]`` = 1 when dof i moves the body of dof d, itself included, and
        ``same[i, d]`` = 1 when both belong to one joint: (n_dof, n_dof) each (kept,
        read-only, with the dense tree matrices).
        """
        if self._dense_ancestry is not None:
            return self._dense_ancestry
        return (self.moves_matrix()[self.dof_body].T,
                self.dof_joint[:, None] == self.dof_joint[None, :])

    def path_sum(self, x: np.ndarray) -> np.ndarray:
        """Per body, the sum over the degrees of freedom on its path from the root:
        (..., n_dof, k) -> (..., n_bodies, k).
        """
        if self.dof_moves_body is not None:
            return self.dof_moves_body @ x
        out = np.zeros(x.shape[:-2] + (self.n_bodies, x.shape[-1]))
        for k, parent in enumerate(self.joint_parent_body):
            d, n = self.joint_dof_start[k], self.joint_models[k].nv
            own = x[..., d, :] if n == 1 else np.sum(x[..., d:d + n, :], axis=-2)
            out[..., k + 1, :] = out[..., parent, :] + own
        return out

    def subtree_sum(self, x: np.ndarray) -> np.ndarray:
        """Per degree of freedom, the sum over the bodies it moves:
        (..., n_bodies, k) -> (..., n_dof, k).
        """
        if self.dof_moves_body is not None:
            return self.dof_moves_body.T @ x
        acc = np.array(x, dtype=float)
        for k in range(self.n_moving - 1, -1, -1):
            acc[..., self.joint_parent_body[k], :] += acc[..., k + 1, :]
        return acc[..., self.dof_body, :]
