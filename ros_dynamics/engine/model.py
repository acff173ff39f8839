"""The robot model: topology, joints, bodies, frames and limits, built once and never written.

A :class:`RobotModel` holds what does not change while a robot runs -- the tree, each moving
joint's :class:`~ros_dynamics.engine.joints.JointModel` and placement, the described inertials,
the limits -- as read-only arrays, precomputed once when it is built. After construction no
attribute can be assigned but one: :attr:`RobotModel.settings`, the run-time
:class:`~ros_dynamics.engine.settings.DynamicSettings` (gravity, payloads, rotor inertia,
friction), replaced as a whole in one assignment. Algorithms live in their own modules, take the
model as an argument and never modify it; per-call results live in a
:class:`~ros_dynamics.engine.kinematics.KinematicState`, per-solver state in an
:class:`~ros_dynamics.engine.ik.IKSolver`. The algorithm methods a model offers
(``m.gravity_torques(q)``, ...) are one-line entry points into those modules, written apart in
:mod:`~ros_dynamics.engine.entry_points`.

Frames: *world* is the fixed frame every pose, Jacobian and wrench refers to; for a fixed-base
model it is the frame of the URDF root link (:attr:`RobotModel.root_link`); with a root joint
(``root_joint='floating'`` or ``'planar'`` at load) it is the frame the root link moves in.

Order of ``q`` and ``v``: the independent (non-mimic) joints in ``joint_names``, which is the
depth-first order of the description from the root (the root joint first), children in the
order their joints appear in the file; each joint has ``joint_nq[i]`` coordinates in ``q`` from
``joint_idx_q[i]`` and ``joint_nv[i]`` in ``v`` (velocities, accelerations, torques) from
``joint_idx_v[i]``, as in Pinocchio: one each for revolute, continuous and prismatic joints, 7 and
6 for a floating joint, 4 and 3 for a planar one (:mod:`~ros_dynamics.engine.joints`), named in
:attr:`RobotModel.q_names` and :attr:`RobotModel.v_names`. Units: [rad] for revolute/continuous
joints, [m] for prismatic joints.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
import os
from types import MappingProxyType
from typing import Any, Optional

import numpy as np

from .dh import specs_from_dh
from .entry_points import AlgorithmEntryPoints
from .exceptions import ModelError, UnknownFrameError, UnknownJointError
from .joints import X as X_TERM
from .rotations import matrix_z_to
from .settings import DynamicSettings, make_settings
from .tree import assemble
from .urdf import parse_urdf, read_urdf_file

ArrayLike = Any


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


def _frozen(a, dtype=float):
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


class RobotModel(AlgorithmEntryPoints):
    """Kinematic tree of a robot, fixed or floating base, with its dynamic parameters (see the
    module docstring).

    Build it with :meth:`from_urdf_file`, :meth:`from_urdf_string` or :meth:`from_dh`. Every
    method taking ``q`` accepts a leading batch dimension, ``q`` of shape ``(..., nq)`` and
    velocities of shape ``(..., nv)``.
    """

    def __init__(self, links, joints, *, name: str = '', strict: bool = False,
                 notes: Iterable[str] = (), root_joint: Optional[str] = None):
        topo = assemble(links, joints, strict=strict, root_joint=root_joint)
        self.name = name
        #: Name of the URDF root link, whose frame is the world frame of a fixed-base model.
        self.root_link = topo.root
        #: The joint between the world and the root link chosen at load: None (a fixed base),
        #: ``'floating'`` or ``'planar'`` (named ``'root_joint'`` in :attr:`joint_names`).
        self.root_joint = root_joint
        #: Notes on the description: inertials filled from geometry, suspicious inertials.
        self.warnings = tuple(notes) + topo.warnings
        self.joint_names = topo.independent
        self._joint_index = {n: i for i, n in enumerate(self.joint_names)}
        self.moving_joint_names = tuple(j.name for j in topo.moving)
        #: Moving joint name -> index (mimic joints included), read-only.
        self.moving_index = MappingProxyType({n: i for i, n in enumerate(self.moving_joint_names)})
        self.mimic_joint_names = tuple(j.name for j in topo.moving if j.mimic is not None)
        self.n_moving = len(topo.moving)
        self.n_bodies = self.n_moving + 1
        self._init_joints(topo)
        self._init_coordinates(topo)
        self._init_frames(topo)
        self._init_limits(topo)
        #: Inertials of the bodies as described (no payloads): mass (n_bodies,), center of mass
        #: (n_bodies, 3) in the body frame, inertia (n_bodies, 3, 3) about it. The algorithms
        #: read the :attr:`settings`' instead, which include the payloads.
        self.described_body_mass = _frozen(topo.body_mass)
        self.described_body_com = _frozen(topo.body_com)
        self.described_body_inertia = _frozen(topo.body_inertia)
        #: Identity the settings made for this model carry.
        self.key = object()
        self._settings = make_settings(self)
        self._sealed = True

    def _init_joints(self, topo):
        """Moving joints (mimic joints included), depth-first, through their joint models, and
        their degrees of freedom.
        """
        n = self.n_moving
        models = topo.models
        #: The :class:`~ros_dynamics.engine.joints.JointModel` of every moving joint.
        self.joint_models = models
        self.joint_parent_body = _frozen(topo.parent_body, int)
        #: T_parentbody_child (n_moving, 4, 4): the child link frame at q = 0.
        self.joint_placement = _frozen(topo.placement)
        self.joint_axis = _frozen(topo.axis)
        #: Rotation (n_moving, 3, 3) from each joint's z-aligned frame (the child link frame
        #: turned so that the joint axis is z; the child frame itself for multi-DOF joints) to
        #: the child link frame.
        turns = {}                          # most joints share a few axes
        for a in map(tuple, topo.axis):
            if a not in turns:
                turns[a] = matrix_z_to(a)
        A = np.array([turns[a] for a in map(tuple, topo.axis)]).reshape(n, 3, 3)
        self.joint_z_rotation = _frozen(A)
        Z = np.array([m.transform_terms if m.nq == 1 else np.zeros((4, 4, 4))
                      for m in models]).reshape(n, 4, 4, 4)
        A4 = np.zeros((n, 4, 4))
        A4[:, :3, :3], A4[:, 3, 3] = A, 1.0
        PA = topo.placement @ A4
        #: (n_moving, 4, 16): the transform T_parentbody_child(x) of a one-DOF joint is
        #: ``[cos x, sin x, 1, x] @ joint_transform_basis[k]`` (P A Z_i A^T, flattened); zero
        #: for multi-DOF joints (:attr:`multi_dof_joints`), which compute their own.
        self.joint_transform_basis = _frozen(
            (PA[:, None] @ Z @ np.swapaxes(A4, 1, 2)[:, None]).reshape(n, 4, 16))
        #: False when no joint transform depends on ``x`` itself (no prismatic joints).
        self.uses_x_term = bool(np.any(self.joint_transform_basis[:, X_TERM]))
        #: T_parentz_jointz (n_moving, 4, 4): joint k's z-aligned frame at q = 0 in its parent
        #: joint's z-aligned frame (the world frame for joints on the fixed base) -- the
        #: constant part of a joint in the trajectory kernel and the IK chains.
        A_parent = np.concatenate([np.eye(4)[None], A4])[topo.parent_body]
        self.joint_z_placement = _frozen(np.swapaxes(A_parent, 1, 2) @ PA)

        # Degrees of freedom: the velocity coordinates of every moving joint, joint by joint
        # (one per one-DOF joint: then dof k is moving joint k).
        nv = np.array([m.nv for m in models], dtype=int)
        #: Index of each moving joint's first degree of freedom (n_moving,).
        self.joint_dof_start = _frozen(np.cumsum(nv) - nv, int)
        dof_joint = np.repeat(np.arange(n), nv)
        #: Number of degrees of freedom of the moving joints, mimic joints included.
        self.n_dof = len(dof_joint)
        #: Moving joint (n_dof,) and body it moves (n_dof,) of every degree of freedom.
        self.dof_joint = _frozen(dof_joint, int)
        self.dof_body = _frozen(dof_joint + 1, int)
        #: Motion subspace (n_dof, 6) ``[linear; angular]`` of each degree of freedom in its
        #: joint's child frame.
        motion = [m.motion_subspace.reshape(-1, 2, 3) @ A[k].T for k, m in enumerate(models)]
        self.dof_motion = _frozen(np.concatenate(motion).reshape(-1, 6) if n else
                                  np.zeros((0, 6)))
        #: (n_dof, 36, 6): each degree of freedom's motion in world, ``[R s_v + p x R s_w;
        #: R s_w]`` for its body's pose (R, p), as a linear map of the body's pose terms
        #: ``p_h[a] R[b, j]`` (``p_h = [p; 1]``, flattened (a, b, j); see
        #: :attr:`~ros_dynamics.engine.kinematics.KinematicState.S_world`): one batched product.
        self.dof_motion_basis = _frozen(_motion_basis(self.dof_motion))
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
                jumps.append(_frozen(ancestor, int))
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
            self.dof_moves_body = _frozen(moves)
            self._dense_ancestry = tuple(_frozen(a, a.dtype) for a in self.dof_ancestry())
        #: True when some joint has several degrees of freedom (a floating or planar joint).
        self.has_multi_dof = bool(self.n_dof != n)

    def _init_coordinates(self, topo):
        """Configuration ``q`` and velocity ``v`` of the independent joints, and how every
        moving joint reads them.
        """
        models = topo.models
        indep = [self.joint_models[self.moving_index[name]] for name in self.joint_names]
        nq = np.array([m.nq for m in indep], dtype=int)
        nv = np.array([m.nv for m in indep], dtype=int)
        #: Per independent joint: its first index in ``q`` and in ``v``, and how many
        #: coordinates it has there (Pinocchio's ``idx_q``, ``idx_v``, ``nq``, ``nv``).
        self.joint_idx_q = _frozen(np.cumsum(nq) - nq, int)
        self.joint_idx_v = _frozen(np.cumsum(nv) - nv, int)
        self.joint_nq = _frozen(nq, int)
        self.joint_nv = _frozen(nv, int)
        #: Sizes of the configuration ``q`` and of the velocity ``v`` (and acceleration,
        #: torque): equal unless a joint is floating or planar.
        self.nq = int(np.sum(nq))
        self.nv = int(np.sum(nv))
        #: Names of the coordinates of ``q`` (nq,) and of ``v`` (nv,): a one-DOF joint's
        #: coordinate carries its name, a multi-DOF joint's are named ``<joint>_<coordinate>``
        #: (``root_joint_x``, ..., ``root_joint_qw``; ``root_joint_vx``, ..., ``root_joint_wz``).
        self.q_names = tuple(n if m.nq == 1 else f'{n}_{c}'
                             for n, m in zip(self.joint_names, indep) for c in m.q_coordinates)
        self.v_names = tuple(n if m.nv == 1 else f'{n}_{c}'
                             for n, m in zip(self.joint_names, indep) for c in m.v_coordinates)
        #: Name of a coordinate of ``q`` -> its index, read-only.
        self.q_name_index = MappingProxyType({n: i for i, n in enumerate(self.q_names)})
        one_dof = [i for i, m in enumerate(indep) if m.nq == 1]
        #: The independent one-DOF joints (revolute, continuous, prismatic): what a
        #: ``JointState`` carries and what drives; all of :attr:`joint_names` for a fixed base
        #: without floating or planar joints. Their indices in ``q`` and in ``v``.
        self.actuated_joint_names = tuple(self.joint_names[i] for i in one_dof)
        self.actuated_q_index = _frozen(self.joint_idx_q[one_dof], int)
        self.actuated_v_index = _frozen(self.joint_idx_v[one_dof], int)
        #: Multi-DOF joints as ``(moving joint k, joint model, index of its first coordinate in
        #: q, index of its first coordinate in v)``.
        self.multi_dof_joints = tuple(
            (k, m, int(self.joint_idx_q[topo.q_index[k]]), int(self.joint_idx_v[topo.q_index[k]]))
            for k, m in enumerate(models) if m.nq > 1)
        one = np.array([m.nq == 1 for m in models], dtype=bool)
        #: Per moving joint: the independent joint it follows (itself unless a mimic joint),
        #: as an index in :attr:`joint_names`; for one-DOF joints the index in ``q`` its
        #: position is read from, the multiplier and the offset (0 for multi-DOF joints).
        self.joint_leader = _frozen(topo.q_index, int)
        self.joint_q_source = _frozen(self.joint_idx_q[topo.q_index] if self.n_moving else [],
                                      int)
        self.joint_multiplier = _frozen(np.where(one, topo.multiplier, 0.0))
        self.joint_offset = _frozen(np.where(one, topo.offset, 0.0))
        self.has_mimic = bool(self.mimic_joint_names)
        #: True when ``q`` is the positions of the moving joints themselves (no mimic joints,
        #: no multi-DOF joints).
        self.q_is_joint_positions = not (self.has_mimic or self.has_multi_dof)
        dof_v = np.concatenate([self.joint_idx_v[topo.q_index[k]] + np.arange(m.nv)
                                for k, m in enumerate(models)]).astype(int) \
            if self.n_moving else np.zeros(0, dtype=int)
        dof_multiplier = topo.multiplier[self.dof_joint] if self.n_moving else np.zeros(0)
        #: Per degree of freedom: the index in ``v`` its rate is read from and the multiplier
        #: (mimic joints; 1 otherwise); as a matrix ``G`` (n_dof, nv), dof rates = ``G v``.
        self.dof_v_source = _frozen(dof_v, int)
        self.dof_multiplier = _frozen(dof_multiplier)
        #: ``G`` (n_dof, nv) of a model with mimic joints (None without: then G = I).
        self.mimic_matrix = _frozen(self.rate_matrix()) if self.has_mimic else None

    def _init_frames(self, topo):
        """Frames: every link, depth-first."""
        self.frame_names = topo.link_order
        self._frame_index = {n: i for i, n in enumerate(self.frame_names)}
        self.frame_body = _frozen([topo.link_body[n] for n in self.frame_names], int)
        self.frame_placement = _frozen([topo.link_placement[n] for n in self.frame_names])
        #: Parent frame of every frame but the root (the URDF tree of links).
        self.frame_parent = {j.child: j.parent for j in topo.joints}
        parents = set(self.frame_parent.values())
        #: Frames no other frame hangs from (the end effectors of a tree), depth-first.
        self.leaf_frames = tuple(f for f in self.frame_names if f not in parents)

    def _init_limits(self, topo):
        """Limits and joint dynamics of the independent joints, per coordinate of ``q`` or
        ``v``.
        """
        by_name = {j.name: j for j in topo.moving}
        indep = [by_name[n] for n in self.joint_names]
        models = [topo.models[self.moving_index[n]] for n in self.joint_names]

        def per_q(values):
            return _frozen([x for v in values for x in v])

        def per_v(attribute):
            return _frozen([getattr(j, attribute) for m, j in zip(models, indep)
                            for _ in range(m.nv)])

        bounds = [m.position_bounds(j.lower, j.upper) for m, j in zip(models, indep)]
        sampling = [m.sampling_bounds(j.lower, j.upper) for m, j in zip(models, indep)]
        #: Position bounds (nq,) [rad or m]: the URDF limits, +-inf for unbounded joints
        #: (translations of floating and planar joints), +-1 for their unit vectors.
        self.lower_limits = per_q(b[0] for b in bounds)
        self.upper_limits = per_q(b[1] for b in bounds)
        #: Finite ranges (nq,) random configurations are drawn from (unbounded: one turn;
        #: translations of floating and planar joints: +-1 m).
        self.sampling_lower = per_q(b[0] for b in sampling)
        self.sampling_upper = per_q(b[1] for b in sampling)
        #: True (nq,) where the position is an angle (a turn brings the joint back).
        self.angular_joints = _frozen([a for m in models for a in m.angular_coordinates], bool)
        #: Per coordinate of ``v`` (nv,): URDF velocity and effort limits, damping and Coulomb
        #: friction (inf, inf, 0 and 0 for floating and planar joints).
        self.velocity_limits = per_v('velocity')
        self.effort_limits = per_v('effort')
        self.joint_damping = per_v('damping')
        self.joint_friction = per_v('friction')
        #: Type of every independent joint (as :attr:`joint_names`).
        self.joint_types = tuple(j.type for j in indep)

    def __setattr__(self, name, value):
        if getattr(self, '_sealed', False) and name != 'settings':
            raise AttributeError(f'RobotModel attributes are read-only ({name!r}); only '
                                 '`settings` can be replaced')
        object.__setattr__(self, name, value)

    # --- construction -----------------------------------------------------------------------

    @classmethod
    def from_urdf_string(cls, xml: str, *, root_joint: Optional[str] = None, strict: bool = False,
                         fill_inertials_density: Optional[float] = None,
                         base_dir: Optional[str] = None,
                         mesh_search_paths: Sequence[str] = ()) -> RobotModel:
        """Model of the URDF text ``xml`` (e.g. the ``robot_description`` parameter).

        ``root_joint``, as Pinocchio's ``buildModelFromUrdf(path, root_joint)``: None (the root
        link is the fixed base, the world frame), ``'floating'`` (a free flyer named
        ``'root_joint'`` between the world and the root link: ``q = [x, y, z, qx, qy, qz, qw,
        joints...]``, the root link's pose in the world; ``v = [v; w; joint rates]``, its
        velocity in its own axes) or ``'planar'`` (``q = [x, y, cos, sin, joints...]``,
        ``v = [vx, vy, wz, joint rates]``, in the world's x-y plane).

        ``strict=True`` turns physically impossible inertials from warnings into
        :class:`~ros_dynamics.engine.exceptions.InertiaError`, and a ``<mimic>`` of an unknown
        joint into a :class:`~ros_dynamics.engine.exceptions.UrdfError`. ``fill_inertials_density``
        [kg/m^3] (off by default) gives links moved by joints that have no ``<inertial>`` the
        mass properties of their collision (else visual) geometry at that density, noted in
        :attr:`warnings`; mesh paths resolve against ``base_dir`` and ``mesh_search_paths``.
        """
        name, links, joints, notes = parse_urdf(
            xml, strict=strict, fill_inertials_density=fill_inertials_density, base_dir=base_dir,
            mesh_search_paths=mesh_search_paths, root_joint=root_joint)
        return cls(links, joints, name=name, strict=strict, notes=notes, root_joint=root_joint)

    @classmethod
    def from_urdf_file(cls, path, *, root_joint: Optional[str] = None, strict: bool = False,
                       fill_inertials_density: Optional[float] = None,
                       mesh_search_paths: Sequence[str] = ()) -> RobotModel:
        """Model of the URDF file at ``path`` (see :meth:`from_urdf_string`)."""
        return cls.from_urdf_string(
            read_urdf_file(path), root_joint=root_joint, strict=strict,
            fill_inertials_density=fill_inertials_density,
            base_dir=os.path.dirname(os.path.abspath(os.fspath(path))),
            mesh_search_paths=mesh_search_paths)

    @classmethod
    def from_dh(cls, rows, tool=None, *, base_frame: str = 'base_link', name: str = 'dh_robot',
                strict: bool = False) -> RobotModel:
        """Model of a serial arm from a modified-DH table (see :mod:`ros_dynamics.engine.dh`)."""
        links, joints = specs_from_dh(rows, tool=tool, base_frame=base_frame)
        return cls(links, joints, name=name, strict=strict)

    def __repr__(self):
        return (f'RobotModel({self.name!r}, nq={self.nq}, nv={self.nv}, '
                f'frames={len(self.frame_names)}, root_link={self.root_link!r}, '
                f'root_joint={self.root_joint!r})')

    # --- names, indices, configurations ------------------------------------------------------

    def frame_index(self, frame) -> int:
        """Index of a frame given by name (or already an index)."""
        if isinstance(frame, (int, np.integer)) and not isinstance(frame, bool):
            if not 0 <= frame < len(self.frame_names):
                raise UnknownFrameError(frame, self.frame_names)
            return int(frame)
        try:
            return self._frame_index[frame]
        except (KeyError, TypeError):
            raise UnknownFrameError(frame, self.frame_names) from None

    def joint_index(self, joint: str) -> int:
        """Index of an independent joint in :attr:`joint_names` (its coordinates start at
        ``joint_idx_q[i]`` in ``q`` and ``joint_idx_v[i]`` in ``v``; for a model of one-DOF
        joints only, the index is that of ``q`` and ``v``).
        """
        try:
            return self._joint_index[joint]
        except (KeyError, TypeError):
            raise UnknownJointError(joint, self.joint_names) from None

    # --- moving-joint helpers used by the algorithms ------------------------------------------

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

    # --- run-time dynamic settings ----------------------------------------------------------

    @property
    def settings(self) -> DynamicSettings:
        """The current :class:`~ros_dynamics.engine.settings.DynamicSettings`: one consistent
        value; replace it as a whole (``model.settings = model.make_settings(...)``).
        """
        return self._settings

    @settings.setter
    def settings(self, value: DynamicSettings):
        if not isinstance(value, DynamicSettings) or value.model_key is not self.key:
            raise ModelError('settings: expected DynamicSettings made for this model by '
                             'model.make_settings(...)')
        object.__setattr__(self, '_settings', value)

    def make_settings(self, **values) -> DynamicSettings:
        """Validated settings for this model; see
        :func:`~ros_dynamics.engine.settings.make_settings` for the keywords (gravity,
        rotor_inertia, damping, coulomb, payloads) and their defaults.
        """
        return make_settings(self, **values)

    def update_settings(self, **changes) -> DynamicSettings:
        """Replace the named settings, keep the others, in one assignment; returns the new
        value. E.g. ``model.update_settings(payloads=[Payload('tool0', 1.5)])``.
        """
        s = self._settings
        current = dict(gravity=s.gravity, rotor_inertia=s.rotor_inertia, damping=s.damping,
                       coulomb=s.coulomb, payloads=s.payloads)
        unknown = sorted(set(changes) - set(current))
        if unknown:
            raise ModelError(f'update_settings: unknown settings {unknown}; valid: '
                             f'{sorted(current)}')
        current.update(changes)
        self.settings = new = make_settings(self, **current)
        return new

    @property
    def total_mass(self) -> float:
        """Mass [kg] of the bodies the joints move, payloads included; a fixed base (the root
        link and links fixed to it) is not counted, as in Pinocchio; a floating or planar base
        is (a root joint moves it).
        """
        return float(np.sum(self._settings.body_mass[1:]))
