"""The robot model: topology, joints, bodies, frames and limits, built once and never written.

A :class:`Model` holds what does not change while a robot runs -- the tree, each moving joint's
:class:`~ros_dynamics.engine.joints.JointModel` and placement
(:mod:`~ros_dynamics.engine.dof_tree`), the described inertials, the limits -- as read-only
arrays, precomputed once when it is built. After construction no attribute can be assigned but
one: :attr:`Model.settings`, the run-time :class:`~ros_dynamics.engine.settings.DynamicSettings`
(gravity, payloads, rotor inertia, friction), replaced as a whole in one assignment. The model is
the bottom of the engine: it imports no algorithm. Algorithms live in their own modules, take the
model as an argument and never modify it; per-call results live in a
:class:`~ros_dynamics.engine.kinematics.KinematicState`, per-solver state in an
:class:`~ros_dynamics.engine.ik.IKSolver`. :class:`~ros_dynamics.engine.robot.RobotModel`, the
class users build, is this model with the algorithms as methods (``m.gravity_torques(q)``), one
thin layer on top (:mod:`~ros_dynamics.engine.robot`).

Frames: *world* is the fixed frame every pose, Jacobian and wrench refers to; for a fixed-base
model it is the frame of the URDF root link (:attr:`Model.root_link`); with a root joint
(``root_joint='floating'`` or ``'planar'`` at load) it is the frame the root link moves in.

Order of ``q`` and ``v``: the independent (non-mimic) joints in ``joint_names``, which is the
depth-first order of the description from the root (the root joint first), children in the
order their joints appear in the file; each joint has ``joint_nq[i]`` coordinates in ``q`` from
``joint_idx_q[i]`` and ``joint_nv[i]`` in ``v`` (velocities, accelerations, torques) from
``joint_idx_v[i]``, as in Pinocchio: one each for revolute, continuous and prismatic joints, 7 and
6 for a floating joint, 4 and 3 for a planar one (:mod:`~ros_dynamics.engine.joints`), named in
:attr:`Model.q_names` and :attr:`Model.v_names`. Units: [rad] for revolute/continuous
joints, [m] for prismatic joints.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
import os
from types import MappingProxyType
from typing import Optional

import numpy as np

from .dh import specs_from_dh
from .dof_tree import DofTree, frozen
from .exceptions import ModelError, UnknownFrameError, UnknownJointError
from .settings import DynamicSettings, make_settings
from .tree import assemble
from .urdf import parse_urdf, read_urdf_file, robot_specs


class Model(DofTree):
    """Kinematic tree of a robot, fixed or floating base, with its dynamic parameters (see the
    module docstring).

    Build it with :meth:`from_urdf_file`, :meth:`from_urdf_string` or :meth:`from_dh` (on
    :class:`~ros_dynamics.engine.robot.RobotModel`, to have the algorithms as methods).
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
        self.described_body_mass = frozen(topo.body_mass)
        self.described_body_com = frozen(topo.body_com)
        self.described_body_inertia = frozen(topo.body_inertia)
        #: Identity the settings made for this model carry.
        self.key = object()
        self._settings = make_settings(self)
        self._sealed = True

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
        self.joint_idx_q = frozen(np.cumsum(nq) - nq, int)
        self.joint_idx_v = frozen(np.cumsum(nv) - nv, int)
        self.joint_nq = frozen(nq, int)
        self.joint_nv = frozen(nv, int)
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
        self.actuated_q_index = frozen(self.joint_idx_q[one_dof], int)
        self.actuated_v_index = frozen(self.joint_idx_v[one_dof], int)
        #: Multi-DOF joints as ``(moving joint k, joint model, index of its first coordinate in
        #: q, index of its first coordinate in v)``.
        self.multi_dof_joints = tuple(
            (k, m, int(self.joint_idx_q[topo.q_index[k]]), int(self.joint_idx_v[topo.q_index[k]]))
            for k, m in enumerate(models) if m.nq > 1)
        one = np.array([m.nq == 1 for m in models], dtype=bool)
        #: Per moving joint: the independent joint it follows (itself unless a mimic joint),
        #: as an index in :attr:`joint_names`; for one-DOF joints the index in ``q`` its
        #: position is read from, the multiplier and the offset (0 for multi-DOF joints).
        self.joint_leader = frozen(topo.q_index, int)
        self.joint_q_source = frozen(self.joint_idx_q[topo.q_index] if self.n_moving else [],
                                      int)
        self.joint_multiplier = frozen(np.where(one, topo.multiplier, 0.0))
        self.joint_offset = frozen(np.where(one, topo.offset, 0.0))
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
        self.dof_v_source = frozen(dof_v, int)
        self.dof_multiplier = frozen(dof_multiplier)
        #: ``G`` (n_dof, nv) of a model with mimic joints (None without: then G = I).
        self.mimic_matrix = frozen(self.rate_matrix()) if self.has_mimic else None

    def _init_frames(self, topo):
        """Frames: every link, depth-first."""
        self.frame_names = topo.link_order
        self._frame_index = {n: i for i, n in enumerate(self.frame_names)}
        self.frame_body = frozen([topo.link_body[n] for n in self.frame_names], int)
        self.frame_placement = frozen([topo.link_placement[n] for n in self.frame_names])
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
            return frozen([x for v in values for x in v])

        def per_v(attribute):
            return frozen([getattr(j, attribute) for m, j in zip(models, indep)
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
        self.angular_joints = frozen([a for m in models for a in m.angular_coordinates], bool)
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
            raise AttributeError(f'{type(self).__name__} attributes are read-only ({name!r}); only '
                                 '`settings` can be replaced')
        object.__setattr__(self, name, value)

    # --- construction -----------------------------------------------------------------------

    @classmethod
    def from_urdf_string(cls, xml: str, *, root_joint: Optional[str] = None, strict: bool = False,
                         fill_inertials_density: Optional[float] = None,
                         base_dir: Optional[str] = None,
                         mesh_search_paths: Sequence[str] = ()) -> Model:
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
    def from_urdf_model(cls, urdf, *, root_joint: Optional[str] = None, strict: bool = False,
                        fill_inertials_density: Optional[float] = None,
                        base_dir: Optional[str] = None,
                        mesh_search_paths: Sequence[str] = ()) -> Model:
        """Model of a description urdf_parser_py has read (its ``URDF`` object, e.g.
        ``URDF.from_xml_string(text)`` or ``URDF.from_parameter_server()``), checked as
        :meth:`from_urdf_string` checks text; the object is only read.
        """
        name, links, joints, notes = robot_specs(
            urdf, strict=strict, fill_inertials_density=fill_inertials_density,
            base_dir=base_dir, mesh_search_paths=mesh_search_paths, root_joint=root_joint)
        return cls(links, joints, name=name, strict=strict, notes=notes, root_joint=root_joint)

    @classmethod
    def from_urdf_file(cls, path, *, root_joint: Optional[str] = None, strict: bool = False,
                       fill_inertials_density: Optional[float] = None,
                       mesh_search_paths: Sequence[str] = ()) -> Model:
        """Model of the URDF file at ``path`` (see :meth:`from_urdf_string`)."""
        return cls.from_urdf_string(
            read_urdf_file(path), root_joint=root_joint, strict=strict,
            fill_inertials_density=fill_inertials_density,
            base_dir=os.path.dirname(os.path.abspath(os.fspath(path))),
            mesh_search_paths=mesh_search_paths)

    @classmethod
    def from_dh(cls, rows, tool=None, *, base_frame: str = 'base_link', name: str = 'dh_robot',
                strict: bool = False) -> Model:
        """Model of a serial arm from a modified-DH table (see :mod:`ros_dynamics.engine.dh`)."""
        links, joints = specs_from_dh(rows, tool=tool, base_frame=base_frame)
        return cls(links, joints, name=name, strict=strict)

    def __repr__(self):
        return (f'{type(self).__name__}({self.name!r}, nq={self.nq}, nv={self.nv}, '
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
