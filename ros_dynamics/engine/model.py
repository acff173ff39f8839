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

Frames: *world* is the fixed frame every pose, Jacobian and wrench refers to; for these
fixed-base models it is the frame of the URDF root link (:attr:`RobotModel.root_link`).

Order of ``q``: the independent (actuated, non-mimic) joints in ``joint_names``, which is the
depth-first order of the description from the root link, children in the order their joints
appear in the file. Units: [rad] for revolute/continuous joints, [m] for prismatic joints.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
import os
from typing import Any, Optional

import numpy as np

from . import kinematics
from .dh import specs_from_dh
from .entry_points import AlgorithmEntryPoints
from .exceptions import ModelError, ShapeError, UnknownFrameError, UnknownJointError
from .joints import X as X_TERM
from .rotations import matrix_z_to
from .settings import DynamicSettings, make_settings
from .tree import assemble
from .urdf import parse_urdf, read_urdf_file

ArrayLike = Any


def _frozen(a, dtype=float):
    a = np.array(a, dtype=dtype)
    a.setflags(write=False)
    return a


class RobotModel(AlgorithmEntryPoints):
    """Kinematic tree of a fixed-base robot with its dynamic parameters (see the module
    docstring).

    Build it with :meth:`from_urdf_file`, :meth:`from_urdf_string` or :meth:`from_dh`. Every
    method taking ``q`` accepts a leading batch dimension, ``q`` of shape ``(..., nq)``.
    """

    def __init__(self, links, joints, *, name: str = '', strict: bool = False,
                 notes: Iterable[str] = ()):
        topo = assemble(links, joints, strict=strict)
        self.name = name
        #: Name of the URDF root link, whose frame is the world frame of a fixed-base model.
        self.root_link = topo.root
        #: Notes on the description: inertials filled from geometry, suspicious inertials.
        self.warnings = tuple(notes) + topo.warnings
        self.joint_names = topo.independent
        self.nq = len(self.joint_names)
        #: Size of velocity, acceleration and torque vectors. Every joint a model has now moves
        #: along one coordinate, so it equals ``nq``; code written for ``(..., nv)`` vectors
        #: (regressors, observers) keeps working for joints whose configuration is larger.
        self.nv = self.nq
        self._joint_index = {n: i for i, n in enumerate(self.joint_names)}
        self.moving_joint_names = tuple(j.name for j in topo.moving)
        self._moving_index = {n: i for i, n in enumerate(self.moving_joint_names)}
        self.mimic_joint_names = tuple(j.name for j in topo.moving if j.mimic is not None)
        self.n_moving = len(topo.moving)
        self.n_bodies = self.n_moving + 1
        self._init_joints(topo)
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
        """Moving joints (mimic joints included), depth-first, through their joint models."""
        n = self.n_moving
        #: The :class:`~ros_dynamics.engine.joints.JointModel` of every moving joint.
        self.joint_models = topo.models
        self.joint_parent_body = _frozen(topo.parent_body, int)
        #: T_parentbody_child (n_moving, 4, 4): the child link frame at q = 0.
        self.joint_placement = _frozen(topo.placement)
        self.joint_axis = _frozen(topo.axis)
        #: Rotation (n_moving, 3, 3) from each joint's z-aligned frame (the child link frame
        #: turned so that the joint axis is z) to the child link frame.
        A = np.array([matrix_z_to(a) for a in topo.axis]).reshape(n, 3, 3)
        self.joint_z_rotation = _frozen(A)
        Z = np.array([m.transform_terms for m in topo.models]).reshape(n, 4, 4, 4)
        A4 = np.zeros((n, 4, 4))
        A4[:, :3, :3], A4[:, 3, 3] = A, 1.0
        PA = topo.placement @ A4
        #: (n_moving, 4, 16): the joint transform T_parentbody_child(x) is
        #: ``[cos x, sin x, 1, x] @ joint_transform_basis[k]`` (P A Z_i A^T, flattened).
        self.joint_transform_basis = _frozen(
            (PA[:, None] @ Z @ np.swapaxes(A4, 1, 2)[:, None]).reshape(n, 4, 16))
        #: False when no joint transform depends on ``x`` itself (no prismatic joints).
        self.uses_x_term = bool(np.any(self.joint_transform_basis[:, X_TERM]))
        #: Motion subspace (n_moving, 6) ``[linear; angular]`` of each joint in its child frame.
        motion_z = np.array([m.motion_z for m in topo.models]).reshape(n, 2, 3)
        self.joint_motion = _frozen((A[:, None] @ motion_z[..., None]).reshape(n, 6))
        #: T_parentz_jointz (n_moving, 4, 4): joint k's z-aligned frame at q = 0 in its parent
        #: joint's z-aligned frame (the world frame for joints on the fixed base) -- the
        #: constant part of a joint in the trajectory kernel and the IK chains.
        A_parent = np.concatenate([np.eye(4)[None], A4])[topo.parent_body]
        self.joint_z_placement = _frozen(np.swapaxes(A_parent, 1, 2) @ PA)
        self.joint_q_index = _frozen(topo.q_index, int)
        self.joint_multiplier = _frozen(topo.multiplier)
        self.joint_offset = _frozen(topo.offset)
        self.has_mimic = bool(self.mimic_joint_names)
        G = np.zeros((n, self.nq))
        G[np.arange(n), topo.q_index] = topo.multiplier
        self.mimic_matrix = _frozen(G)
        # joint_moves_body[b, k] = 1 when moving joint k lies on the path from the root to body b.
        moves = np.zeros((self.n_bodies, n))
        for k, parent in enumerate(topo.parent_body):
            moves[k + 1] = moves[parent]
            moves[k + 1, k] = 1.0
        self.joint_moves_body = _frozen(moves)

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
        """Limits and joint dynamics of the independent joints."""
        by_name = {j.name: j for j in topo.moving}
        indep = [by_name[n] for n in self.joint_names]
        models = [topo.models[self._moving_index[n]] for n in self.joint_names]
        bounds = np.array([m.position_bounds(j.lower, j.upper) for m, j in zip(models, indep)])
        sampling = np.array([m.sampling_bounds(j.lower, j.upper) for m, j in zip(models, indep)])
        #: Position bounds (nq,) [rad or m]: the URDF limits, +-inf for unbounded joints.
        self.lower_limits = _frozen(bounds.reshape(-1, 2)[:, 0])
        self.upper_limits = _frozen(bounds.reshape(-1, 2)[:, 1])
        #: Finite ranges (nq,) random configurations are drawn from (unbounded: one turn).
        self.sampling_lower = _frozen(sampling.reshape(-1, 2)[:, 0])
        self.sampling_upper = _frozen(sampling.reshape(-1, 2)[:, 1])
        #: True (nq,) where the position is an angle (a turn brings the joint back).
        self.angular_joints = _frozen([m.angular for m in models], bool)
        self.velocity_limits = _frozen([j.velocity for j in indep])
        self.effort_limits = _frozen([j.effort for j in indep])
        self.joint_damping = _frozen([j.damping for j in indep])
        self.joint_friction = _frozen([j.friction for j in indep])
        self.joint_types = tuple(j.type for j in indep)

    def __setattr__(self, name, value):
        if getattr(self, '_sealed', False) and name != 'settings':
            raise AttributeError(f'RobotModel attributes are read-only ({name!r}); only '
                                 '`settings` can be replaced')
        object.__setattr__(self, name, value)

    # --- construction -----------------------------------------------------------------------

    @classmethod
    def from_urdf_string(cls, xml: str, *, strict: bool = False,
                         fill_inertials_density: Optional[float] = None,
                         base_dir: Optional[str] = None,
                         mesh_search_paths: Sequence[str] = ()) -> RobotModel:
        """Model of the URDF text ``xml`` (e.g. the ``robot_description`` parameter).

        ``strict=True`` turns physically impossible inertials from warnings into
        :class:`~ros_dynamics.engine.exceptions.InertiaError`, and a ``<mimic>`` of an unknown
        joint into a :class:`~ros_dynamics.engine.exceptions.UrdfError`. ``fill_inertials_density``
        [kg/m^3] (off by default) gives links moved by joints that have no ``<inertial>`` the
        mass properties of their collision (else visual) geometry at that density, noted in
        :attr:`warnings`; mesh paths resolve against ``base_dir`` and ``mesh_search_paths``.
        """
        name, links, joints, notes = parse_urdf(
            xml, strict=strict, fill_inertials_density=fill_inertials_density, base_dir=base_dir,
            mesh_search_paths=mesh_search_paths)
        return cls(links, joints, name=name, strict=strict, notes=notes)

    @classmethod
    def from_urdf_file(cls, path, *, strict: bool = False,
                       fill_inertials_density: Optional[float] = None,
                       mesh_search_paths: Sequence[str] = ()) -> RobotModel:
        """Model of the URDF file at ``path`` (see :meth:`from_urdf_string`)."""
        return cls.from_urdf_string(
            read_urdf_file(path), strict=strict, fill_inertials_density=fill_inertials_density,
            base_dir=os.path.dirname(os.path.abspath(os.fspath(path))),
            mesh_search_paths=mesh_search_paths)

    @classmethod
    def from_dh(cls, rows, tool=None, *, base_frame: str = 'base_link', name: str = 'dh_robot',
                strict: bool = False) -> RobotModel:
        """Model of a serial arm from a modified-DH table (see :mod:`ros_dynamics.engine.dh`)."""
        links, joints = specs_from_dh(rows, tool=tool, base_frame=base_frame)
        return cls(links, joints, name=name, strict=strict)

    def __repr__(self):
        return (f'RobotModel({self.name!r}, nq={self.nq}, frames={len(self.frame_names)}, '
                f'root_link={self.root_link!r})')

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
        """Index in ``q`` of an independent joint."""
        try:
            return self._joint_index[joint]
        except (KeyError, TypeError):
            raise UnknownJointError(joint, self.joint_names) from None

    def q_from_names(self, names: Sequence[str], positions: ArrayLike,
                     default: Optional[ArrayLike] = None, *,
                     ignore_unknown: bool = False) -> np.ndarray:
        """``q`` (nq,) from (name, position) pairs merged onto ``default`` (zeros if None).

        Names of mimic joints are accepted and ignored (they follow their leader). Unknown
        names raise :class:`UnknownJointError` unless ``ignore_unknown``.
        """
        names = list(names)
        positions = kinematics.as_finite_array(positions, 'positions').reshape(-1)
        if len(names) != positions.size:
            raise ShapeError(f'names and positions: expected equal lengths, got {len(names)} '
                             f'names and {positions.size} positions')
        q = np.zeros(self.nq) if default is None else \
            kinematics.as_joint_vector(self, default, 'default').astype(float).copy()
        for name, value in zip(names, positions):
            i = self._joint_index.get(name)
            if i is not None:
                q[i] = value
            elif name not in self._moving_index and not ignore_unknown:
                raise UnknownJointError(name, self.joint_names)
        return q

    def joint_state_from_q(self, q: ArrayLike) -> tuple[list[str], list[float]]:
        """``(names, positions)`` of the independent joints for one ``q`` (nq,)."""
        q = kinematics.as_joint_vector(self, q, 'q')
        if q.ndim != 1:
            raise ShapeError(f'q: expected one configuration of shape ({self.nq},), got {q.shape}')
        return list(self.joint_names), q.tolist()

    def middle_configuration(self) -> np.ndarray:
        """Middle of the joint limits (nq,); 0 for unbounded joints."""
        finite = np.isfinite(self.lower_limits) & np.isfinite(self.upper_limits)
        return np.where(finite, 0.5 * (np.where(finite, self.lower_limits, 0)
                                       + np.where(finite, self.upper_limits, 0)), 0.0)

    def neutral(self) -> np.ndarray:
        """The configuration (nq,) where every joint is at zero (the description's pose)."""
        return np.zeros(self.nq)

    def random_configuration(self, rng=None, size: Optional[int] = None) -> np.ndarray:
        """Configurations (nq,) -- or (size, nq) -- drawn uniformly inside the limits (one
        turn for unbounded joints); ``rng``: a seed or ``numpy.random.Generator``.
        """
        shape = (self.nq,) if size is None else (int(size), self.nq)
        return np.random.default_rng(rng).uniform(self.sampling_lower, self.sampling_upper,
                                                  size=shape)

    def integrate(self, q: ArrayLike, v: ArrayLike, dt: float = 1.0) -> np.ndarray:
        """The configuration reached from ``q`` moving at ``v`` for ``dt`` [s] (..., nq)."""
        q = kinematics.as_joint_vector(self, q, 'q')
        return q + kinematics.as_joint_vector(self, v, 'v', q.shape[:-1]) * float(dt)

    def difference(self, q0: ArrayLike, q1: ArrayLike) -> np.ndarray:
        """The velocity (..., nq) that moves ``q0`` to ``q1`` in unit time."""
        q0 = kinematics.as_joint_vector(self, q0, 'q0')
        return kinematics.as_joint_vector(self, q1, 'q1', q0.shape[:-1]) - q0

    # --- moving-joint helpers used by the algorithms ------------------------------------------

    def joint_positions(self, q: np.ndarray) -> np.ndarray:
        """Positions (..., n_moving) of every moving joint, mimic joints included."""
        if not self.has_mimic:
            return q
        return q[..., self.joint_q_index] * self.joint_multiplier + self.joint_offset

    def joint_velocities(self, qd: np.ndarray) -> np.ndarray:
        """Velocities (or accelerations) (..., n_moving) of every moving joint."""
        if not self.has_mimic:
            return qd
        return qd[..., self.joint_q_index] * self.joint_multiplier

    def to_independent_columns(self, J: np.ndarray) -> np.ndarray:
        """Map columns over moving joints (..., r, n_moving) to independent joints (..., r, nq)."""
        return J @ self.mimic_matrix if self.has_mimic else J

    def to_independent_forces(self, tau_moving: np.ndarray) -> np.ndarray:
        """Map forces of every moving joint (..., n_moving) to those of the independent joints
        (..., nq).
        """
        return tau_moving @ self.mimic_matrix if self.has_mimic else tau_moving

    def path_sum(self, x: np.ndarray) -> np.ndarray:
        """Per body, the sum over the moving joints on its path from the root:
        (..., n_moving, k) -> (..., n_bodies, k).
        """
        return self.joint_moves_body @ x

    def subtree_sum(self, x: np.ndarray) -> np.ndarray:
        """Per moving joint, the sum over the bodies it moves:
        (..., n_bodies, k) -> (..., n_moving, k).
        """
        return self.joint_moves_body.T @ x

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
        """Mass [kg] of the bodies the joints move, payloads included; the fixed base (the root
        link and links fixed to it) is not counted, as in Pinocchio.
        """
        return float(np.sum(self._settings.body_mass[1:]))
