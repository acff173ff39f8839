"""The robot model: topology, joints, bodies and frames, built once; a facade over the algorithms.

A :class:`RobotModel` holds what does not change while a robot runs (tree, joint axes and
placements, inertias from the description, limits) as read-only arrays, plus a few documented
run-time settings (gravity, rotor inertia, payloads) that are swapped atomically by their
setters and never touch the topology. Algorithms live in their own modules and never modify the
model; per-call results live in a :class:`~ros_dynamics.engine.kinematics.KinematicState`.

Order of ``q``: the independent (actuated, non-mimic) joints in ``joint_names``, which is the
depth-first order of the description from the root link, children in the order their joints
appear in the file. Units: [rad] for revolute/continuous joints, [m] for prismatic joints.
"""
from dataclasses import dataclass, field, replace
import os
import threading

import numpy as np

from . import aba, crba, ik, ik_seeds, jacobians, kinematics, rnea, rnea_batch
from .dh import specs_from_dh
from .exceptions import (
    InvalidInputError,
    ModelError,
    ShapeError,
    UnknownFrameError,
    UnknownJointError,
)
from .rotations import as_matrices, as_vectors, matrix_z_to, skew
from .tree import assemble, parallel_axis
from .urdf import parse_urdf, read_urdf_file

#: Default gravity [m/s^2] in the root frame: REP 103 puts z up; Pinocchio uses the same value.
DEFAULT_GRAVITY = (0.0, 0.0, -9.81)


def _frozen(a, dtype=float):
    a = np.array(a, dtype=dtype)
    a.setflags(write=False)
    return a


@dataclass(frozen=True)
class Payload:
    """A rigid payload fixed to a frame: mass [kg], com (3,) [m] and inertia (3, 3) [kg m^2]
    about its center of mass, both in the frame's coordinates.
    """

    frame: str
    mass: float
    com: np.ndarray
    inertia: np.ndarray


@dataclass(frozen=True)
class DynamicParameters:
    """Run-time dynamic settings of a model; replaced as a whole by the model's setters."""

    gravity: np.ndarray                        # (3,) [m/s^2] in the root frame
    rotor_inertia: np.ndarray                  # (nq,) [kg m^2] or [kg], reflected at the joint
    body_mass: np.ndarray                      # (n_bodies,) payloads included
    body_com: np.ndarray                       # (n_bodies, 3) in body frames
    body_inertia: np.ndarray                   # (n_bodies, 3, 3) about the body com
    payloads: dict = field(default_factory=dict)


class RobotModel:
    """Kinematic tree of a fixed-base robot with its dynamic parameters.

    Build it with :meth:`from_urdf_file`, :meth:`from_urdf_string` or :meth:`from_dh`. Every
    method taking ``q`` accepts a leading batch dimension, ``q`` of shape ``(..., nq)``.
    """

    def __init__(self, links, joints, *, name='', strict=False, notes=()):
        topo = assemble(links, joints, strict=strict)
        self.name = name
        self.root_frame = topo.root
        #: Notes on the description: inertials filled from geometry, suspicious inertials.
        self.warnings = tuple(notes) + topo.warnings
        self.joint_names = topo.independent
        self.nq = len(self.joint_names)
        self._joint_index = {n: i for i, n in enumerate(self.joint_names)}
        self.moving_joint_names = tuple(j.name for j in topo.moving)
        self._moving_index = {n: i for i, n in enumerate(self.moving_joint_names)}
        self.mimic_joint_names = tuple(j.name for j in topo.moving if j.mimic is not None)
        self.n_moving = len(topo.moving)
        self.n_bodies = self.n_moving + 1

        # Moving joints (mimic joints included), depth-first.
        self.joint_parent_body = _frozen(topo.parent_body, int)
        self.joint_placement = _frozen(topo.placement)
        self.joint_axis = _frozen(topo.axis)
        self.joint_axis_column = _frozen(topo.axis[:, :, None])
        self.joint_revolute = _frozen(topo.revolute, bool)
        self.all_revolute = bool(np.all(topo.revolute))
        # Local transform of moving joint k at position x, precomputed (Rodrigues folded into
        # the fixed placement P = (P_R, P_p)): R = rot0 + sin(x) rot_sin + (1 - cos(x)) rot_cos,
        # p = trans0 + x trans_q (revolute: rotation about the axis; prismatic: translation).
        K = skew(topo.axis)
        rev = topo.revolute[:, None, None]
        P_R = topo.placement[:, :3, :3]
        self.joint_rot0 = _frozen(P_R)
        self.joint_rot_sin = _frozen(np.where(rev, P_R @ K, 0.0))
        self.joint_rot_cos = _frozen(np.where(rev, P_R @ K @ K, 0.0))
        self.joint_trans0 = _frozen(topo.placement[:, :3, 3])
        self.joint_trans_q = _frozen(np.where(rev[:, :, 0], 0.0,
                                              (P_R @ topo.axis[:, :, None])[..., 0]))
        #: Rotation (n_moving, 3, 3) from each joint's z-aligned frame (the child link frame
        #: turned so the joint axis is z) to the child link frame; the trajectory dynamics and
        #: the IK chain work in these frames, where a joint turns about z.
        self.joint_z_frame = _frozen([matrix_z_to(a) for a in topo.axis])
        self.joint_q_index = _frozen(topo.q_index, int)
        self.joint_multiplier = _frozen(topo.multiplier)
        self.joint_offset = _frozen(topo.offset)
        self.has_mimic = bool(self.mimic_joint_names)
        G = np.zeros((self.n_moving, self.nq))
        G[np.arange(self.n_moving), topo.q_index] = topo.multiplier
        self.mimic_matrix = _frozen(G)
        # joint_moves_body[b, k] = 1 when moving joint k lies on the path from the root to body b.
        moves = np.zeros((self.n_bodies, self.n_moving))
        for k, parent in enumerate(topo.parent_body):
            moves[k + 1] = moves[parent]
            moves[k + 1, k] = 1.0
        self.joint_moves_body = _frozen(moves)

        # Frames: every link, depth-first.
        self.frame_names = topo.link_order
        self._frame_index = {n: i for i, n in enumerate(self.frame_names)}
        self.frame_body = _frozen([topo.link_body[n] for n in self.frame_names], int)
        self.frame_placement = _frozen([topo.link_placement[n] for n in self.frame_names])
        #: Parent frame of every frame but the root (the URDF tree of links).
        self.frame_parent = {j.child: j.parent for j in topo.joints}

        # Limits and joint dynamics of the independent joints.
        by_name = {j.name: j for j in topo.moving}
        indep = [by_name[n] for n in self.joint_names]
        self.lower_limits = _frozen([j.lower if j.type != 'continuous' else -np.inf for j in indep])
        self.upper_limits = _frozen([j.upper if j.type != 'continuous' else np.inf for j in indep])
        self.velocity_limits = _frozen([j.velocity for j in indep])
        self.effort_limits = _frozen([j.effort for j in indep])
        self.joint_damping = _frozen([j.damping for j in indep])
        self.joint_friction = _frozen([j.friction for j in indep])
        self.continuous = _frozen([j.type == 'continuous' for j in indep], bool)
        self.joint_types = tuple(j.type for j in indep)

        self.base_body_mass = _frozen(topo.body_mass)
        self.base_body_com = _frozen(topo.body_com)
        self.base_body_inertia = _frozen(topo.body_inertia)
        self._lock = threading.Lock()
        self._ik_chains = {}       # frame -> ik.Chain
        self._ik_seeds = {}        # frame -> ik_seeds.SeedTable (prepare_ik)
        self._dynamics = DynamicParameters(
            gravity=_frozen(DEFAULT_GRAVITY), rotor_inertia=_frozen(np.zeros(self.nq)),
            body_mass=self.base_body_mass, body_com=self.base_body_com,
            body_inertia=self.base_body_inertia)

    # --- construction -----------------------------------------------------------------------

    @classmethod
    def from_urdf_string(cls, xml, *, strict=False, fill_inertials_density=None, base_dir=None,
                         mesh_search_paths=()):
        """Model of the URDF text ``xml`` (e.g. the ``robot_description`` parameter).

        ``strict=True`` turns physically impossible inertials from warnings into
        :class:`~ros_dynamics.engine.exceptions.InertiaError`. ``fill_inertials_density``
        [kg/m^3] (off by default) gives links moved by joints that have no ``<inertial>`` the
        mass properties of their collision (else visual) geometry at that density, noted in
        :attr:`warnings`; mesh paths resolve against ``base_dir`` and ``mesh_search_paths``.
        """
        name, links, joints, notes = parse_urdf(
            xml, fill_inertials_density=fill_inertials_density, base_dir=base_dir,
            mesh_search_paths=mesh_search_paths)
        return cls(links, joints, name=name, strict=strict, notes=notes)

    @classmethod
    def from_urdf_file(cls, path, *, strict=False, fill_inertials_density=None,
                       mesh_search_paths=()):
        """Model of the URDF file at ``path`` (see :meth:`from_urdf_string`)."""
        return cls.from_urdf_string(
            read_urdf_file(path), strict=strict, fill_inertials_density=fill_inertials_density,
            base_dir=os.path.dirname(os.path.abspath(os.fspath(path))),
            mesh_search_paths=mesh_search_paths)

    @classmethod
    def from_dh(cls, rows, tool=None, *, base_frame='base_link', name='dh_robot', strict=False):
        """Model of a serial arm from a modified-DH table (see :mod:`ros_dynamics.engine.dh`)."""
        links, joints = specs_from_dh(rows, tool=tool, base_frame=base_frame)
        return cls(links, joints, name=name, strict=strict)

    def __repr__(self):
        return (f'RobotModel({self.name!r}, nq={self.nq}, frames={len(self.frame_names)}, '
                f'root={self.root_frame!r})')

    # --- names and indices --------------------------------------------------------------------

    def frame_index(self, frame):
        """Index of a frame given by name (or already an index)."""
        if isinstance(frame, (int, np.integer)):
            if not 0 <= frame < len(self.frame_names):
                raise UnknownFrameError(frame, self.frame_names)
            return int(frame)
        try:
            return self._frame_index[frame]
        except (KeyError, TypeError):
            raise UnknownFrameError(frame, self.frame_names) from None

    def joint_index(self, joint):
        """Index in ``q`` of an independent joint."""
        try:
            return self._joint_index[joint]
        except (KeyError, TypeError):
            raise UnknownJointError(joint, self.joint_names) from None

    def q_from_names(self, names, positions, default=None, *, ignore_unknown=False):
        """``q`` (nq,) from (name, position) pairs merged onto ``default`` (zeros if None).

        Names of mimic joints are accepted and ignored (they follow their leader). Unknown
        names raise :class:`UnknownJointError` unless ``ignore_unknown``.
        """
        names = list(names)
        positions = np.asarray(positions, dtype=float).reshape(-1)
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

    def joint_state_from_q(self, q):
        """``(names, positions)`` of the independent joints for one ``q`` (nq,)."""
        q = kinematics.as_joint_vector(self, q, 'q')
        if q.ndim != 1:
            raise ShapeError(f'q: expected one configuration of shape ({self.nq},), got {q.shape}')
        return list(self.joint_names), q.tolist()

    def middle_configuration(self):
        """Middle of the joint limits (0 for continuous joints), (nq,)."""
        finite = np.isfinite(self.lower_limits) & np.isfinite(self.upper_limits)
        return np.where(finite, 0.5 * (np.where(finite, self.lower_limits, 0)
                                       + np.where(finite, self.upper_limits, 0)), 0.0)

    # --- moving-joint helpers used by the algorithms ------------------------------------------

    def joint_positions(self, q):
        """Positions (..., n_moving) of every moving joint, mimic joints included."""
        if not self.has_mimic:
            return q
        return q[..., self.joint_q_index] * self.joint_multiplier + self.joint_offset

    def joint_velocities(self, qd):
        """Velocities (or accelerations) (..., n_moving) of every moving joint."""
        if not self.has_mimic:
            return qd
        return qd[..., self.joint_q_index] * self.joint_multiplier

    def to_independent_columns(self, J):
        """Map columns over moving joints (..., r, n_moving) to independent joints (..., r, nq)."""
        return J @ self.mimic_matrix if self.has_mimic else J

    def to_independent_forces(self, tau_moving):
        """Generalised forces (..., n_moving) to those of the independent joints (..., nq)."""
        return tau_moving @ self.mimic_matrix if self.has_mimic else tau_moving

    def path_sum(self, x):
        """Per body, the sum over the moving joints on its path from the root:
        (..., n_moving, k) -> (..., n_bodies, k).
        """
        return self.joint_moves_body @ x

    def subtree_sum(self, x):
        """Per moving joint, the sum over the bodies it moves:
        (..., n_bodies, k) -> (..., n_moving, k).
        """
        return self.joint_moves_body.T @ x

    # --- run-time dynamic settings ----------------------------------------------------------

    @property
    def dynamics(self):
        """Current :class:`DynamicParameters` (one consistent snapshot)."""
        return self._dynamics

    @property
    def gravity(self):
        """Gravity vector (3,) [m/s^2] in the root frame; default (0, 0, -9.81)."""
        return self._dynamics.gravity

    def set_gravity(self, g):
        """Set the gravity vector [m/s^2], in the root frame."""
        g = as_vectors(g, 3, 'gravity')
        if g.shape != (3,) or not np.all(np.isfinite(g)):
            raise ModelError(f'gravity: expected 3 finite values, got {np.asarray(g).tolist()}')
        with self._lock:
            self._dynamics = replace(self._dynamics, gravity=_frozen(g))

    @property
    def rotor_inertia(self):
        """Rotor (armature) inertia reflected at each joint (nq,) [kg m^2 or kg]."""
        return self._dynamics.rotor_inertia

    def set_rotor_inertia(self, values, gear_ratio=None):
        """Set rotor inertia per joint: a mapping name -> value or an array (nq,).

        With ``gear_ratio`` (same form), the values are motor-side inertias ``J_m`` and the
        reflected inertia ``J_m * N^2`` is stored. Joints not named keep their value.
        """
        current = np.array(self._dynamics.rotor_inertia)
        new = self._per_joint(values, current, 'rotor inertia')
        if gear_ratio is not None:
            n = self._per_joint(gear_ratio, np.ones(self.nq), 'gear ratio')
            new = np.where(self._named_mask(values), new * n ** 2, new)
        if not np.all(np.isfinite(new)) or np.any(new < 0):
            raise ModelError(f'rotor inertia: expected finite values >= 0, got {new.tolist()}')
        with self._lock:
            self._dynamics = replace(self._dynamics, rotor_inertia=_frozen(new))

    def _named_mask(self, values):
        if isinstance(values, dict):
            return np.array([n in values for n in self.joint_names])
        return np.ones(self.nq, dtype=bool)

    def _per_joint(self, values, base, what):
        out = np.array(base, dtype=float)
        if isinstance(values, dict):
            for name, v in values.items():
                out[self.joint_index(name)] = float(v)
            return out
        arr = np.asarray(values, dtype=float)
        if arr.shape != (self.nq,):
            raise ShapeError(f'{what}: expected {self.nq} values, got shape {arr.shape}')
        return arr.copy()

    @property
    def payloads(self):
        """Attached payloads, frame name -> :class:`Payload`."""
        return dict(self._dynamics.payloads)

    def set_payload(self, frame, mass, com=(0.0, 0.0, 0.0), inertia=None):
        """Attach (or replace) a payload on ``frame``: mass [kg] >= 0, com (3,) [m] and inertia
        (3, 3) [kg m^2] about its center of mass, in the frame's coordinates. Cheap: only the
        inertia of the frame's body changes. ``mass=0`` removes it.
        """
        self.frame_index(frame)
        com = np.asarray(com, dtype=float)
        inertia = np.zeros((3, 3)) if inertia is None else as_matrices(inertia, 3, 'inertia')
        if com.shape != (3,) or inertia.shape != (3, 3):
            raise ShapeError(f'payload: com must have 3 values and inertia 3x3, got shapes '
                             f'{com.shape} and {inertia.shape}')
        if not (np.isfinite(mass) and mass >= 0 and np.all(np.isfinite(com))
                and np.all(np.isfinite(inertia))):
            raise ModelError(f'payload on {frame!r}: mass must be finite and >= 0, com and '
                             'inertia finite')
        with self._lock:
            payloads = dict(self._dynamics.payloads)
            if mass == 0:
                payloads.pop(frame, None)
            else:
                payloads[frame] = Payload(frame, float(mass), _frozen(com), _frozen(inertia))
            self._dynamics = self._with_payloads(payloads)

    def clear_payloads(self):
        """Remove every payload."""
        with self._lock:
            self._dynamics = self._with_payloads({})

    def _with_payloads(self, payloads):
        mass = np.array(self.base_body_mass)
        first = mass[:, None] * self.base_body_com
        second = self.base_body_inertia + parallel_axis(mass, self.base_body_com)
        for p in payloads.values():
            f = self.frame_index(p.frame)
            b = self.frame_body[f]
            T = self.frame_placement[f]
            R = T[:3, :3]
            c = R @ p.com + T[:3, 3]
            mass[b] += p.mass
            first[b] += p.mass * c
            second[b] += R @ p.inertia @ R.T + parallel_axis(p.mass, c)
        com = np.where(mass[:, None] > 0, first / np.where(mass > 0, mass, 1.0)[:, None], 0.0)
        inertia = second - parallel_axis(mass, com)
        return replace(self._dynamics, body_mass=_frozen(mass), body_com=_frozen(com),
                       body_inertia=_frozen(0.5 * (inertia + np.swapaxes(inertia, 1, 2))),
                       payloads=payloads)

    # --- kinematics ---------------------------------------------------------------------------

    def kinematics(self, q, qd=None, qdd=None):
        """One forward-kinematics pass (:class:`~ros_dynamics.engine.kinematics.KinematicState`)
        to read several results from.
        """
        return kinematics.forward_kinematics(self, q, qd, qdd)

    def frame_pose(self, q, frame):
        """``T_root_frame`` (..., 4, 4): pose of ``frame`` in the root frame."""
        return self.kinematics(q).frame_pose(frame)

    def frame_poses(self, q):
        """Poses of every frame: dict name -> (..., 4, 4) ``T_root_frame``."""
        T = self.kinematics(q).frame_poses()
        return {name: T[..., i, :, :] for i, name in enumerate(self.frame_names)}

    def jacobian(self, q, frame, expressed_in='local_world_aligned', point=None):
        """Geometric Jacobian (..., 6, nq) of ``frame`` (rows ``[linear; angular]``); see
        :mod:`ros_dynamics.engine.jacobians` for the three conventions.
        """
        return jacobians.frame_jacobian(self.kinematics(q), frame, expressed_in, point)

    def jacobian_time_derivative(self, q, qd, frame, expressed_in='local_world_aligned',
                                 point=None):
        """Time derivative (..., 6, nq) of :meth:`jacobian` along the motion (q, qd)."""
        return jacobians.jacobian_time_derivative(self.kinematics(q, qd), frame, expressed_in,
                                                  point)

    def jacobian_drift(self, q, qd, frame, expressed_in='local_world_aligned', point=None):
        """Drift term ``Jdot qd`` (..., 6): the acceleration at ``qdd = 0``."""
        Jdot = self.jacobian_time_derivative(q, qd, frame, expressed_in, point)
        return (Jdot @ np.asarray(qd, dtype=float)[..., None])[..., 0]

    def frame_twist(self, q, qd, frame, expressed_in='local_world_aligned', point=None):
        """Twist (..., 6) ``[v; w]`` of ``frame`` in the chosen convention."""
        return jacobians.frame_velocity(self.kinematics(q, qd), frame, expressed_in, point)

    def frame_acceleration(self, q, qd, qdd, frame, expressed_in='local_world_aligned',
                           point=None, kind='classical'):
        """Acceleration (..., 6) of ``frame``; classical by default (linear part = p'')."""
        return jacobians.frame_acceleration(self.kinematics(q, qd, qdd), frame, expressed_in,
                                            point, kind)

    def relative_motion(self, q, qd, qdd, frame_i, frame_j, observer, expressed_in):
        """Motion of ``frame_i`` relative to ``frame_j`` as observed from the moving frame
        ``observer`` and expressed in the axes of ``expressed_in``
        (:class:`~ros_dynamics.engine.kinematics.RelativeMotion`).
        """
        return kinematics.relative_motion(self.kinematics(q, qd, qdd), frame_i, frame_j,
                                          observer, expressed_in)

    # --- dynamics -----------------------------------------------------------------------------

    def inverse_dynamics(self, q, qd, qdd, f_ext=None, *, f_ext_frame='world', friction=False):
        """Joint torques/forces (..., nq) for the motion (q, qd, qdd) by Newton-Euler (RNEA).

        ``f_ext``: dict frame -> wrench ``[force; torque]`` (6,) or (..., 6) [N, N m] applied to
        that frame, expressed in the world (root) frame at the frame's origin
        (``f_ext_frame='world'``) or in the frame's own axes (``'local'``). ``friction=True``
        adds viscous damping and Coulomb friction from the URDF ``<dynamics>``.

        Many states at once (a trajectory) without ``f_ext`` run through
        :mod:`~ros_dynamics.engine.rnea_batch`, which is built for long batches.
        """
        q = kinematics.as_joint_vector(self, q, 'q')
        states = q[..., 0].size
        if f_ext or q.ndim < 2 or states < rnea_batch.min_states(self):
            state = kinematics.forward_kinematics(self, q, qd, qdd, check=False)  # q checked
            return rnea.inverse_dynamics(self, state, f_ext, f_ext_frame, friction=friction)
        batch = q.shape[:-1]
        qd = kinematics.as_joint_vector(self, qd, 'qd', batch)
        qdd = kinematics.as_joint_vector(self, qdd, 'qdd', batch)
        tau = rnea_batch.inverse_dynamics(self, q.reshape(states, self.nq),
                                          qd.reshape(states, self.nq),
                                          qdd.reshape(states, self.nq), friction=friction)
        return tau.reshape(q.shape)

    def gravity_torques(self, q):
        """Torques (..., nq) that hold the robot still against gravity (payloads included)."""
        return rnea.gravity_torques(self, self.kinematics(q))

    def bias_torques(self, q, qd):
        """Coriolis, centrifugal and gravity torques ``C(q, qd) qd + g(q)`` (..., nq)."""
        return rnea.bias_torques(self, self.kinematics(q, qd))

    def coriolis_matrix(self, q, qd):
        """Coriolis matrix (..., nq, nq) with ``C qd`` the velocity torques and ``Mdot - 2C``
        skew-symmetric (the Christoffel-symbol factorisation).
        """
        return crba.coriolis_matrix(self, self.kinematics(q, qd))

    def mass_matrix(self, q):
        """Joint-space mass matrix (..., nq, nq), full and symmetric (CRBA), rotor inertia on
        the diagonal.
        """
        return crba.mass_matrix(self, self.kinematics(q))

    def forward_dynamics(self, q, qd, tau, f_ext=None, *, f_ext_frame='world', friction=False):
        """Joint accelerations (..., nq) for torques ``tau`` (articulated-body algorithm)."""
        return aba.forward_dynamics(self, self.kinematics(q, qd), tau, f_ext, f_ext_frame,
                                    friction=friction)

    def kinetic_energy(self, q, qd):
        """Kinetic energy [J] (...,) of the motion (rotor inertia included)."""
        return rnea.kinetic_energy(self, self.kinematics(q, qd))

    def potential_energy(self, q):
        """Gravitational potential energy [J] (...,), zero at the root frame's origin."""
        return rnea.potential_energy(self, self.kinematics(q))

    @property
    def total_mass(self):
        """Mass [kg] of the bodies the joints move, payloads included; the fixed base (the root
        link and links fixed to it) is not counted, as in Pinocchio.
        """
        return float(np.sum(self._dynamics.body_mass[1:]))

    def center_of_mass(self, q):
        """Center of mass (..., 3) [m] of the moving bodies (see :attr:`total_mass`) in the root
        frame.
        """
        return rnea.center_of_mass(self, self.kinematics(q))

    def center_of_mass_jacobian(self, q):
        """Jacobian (..., 3, nq) of :meth:`center_of_mass`."""
        return rnea.center_of_mass_jacobian(self, self.kinematics(q))

    def wrench_torques(self, q, frame, wrench, expressed_in='local_world_aligned'):
        """Joint torques ``J^T F`` (..., nq) that hold the wrench ``F = [force; torque]`` [N, N m]
        exerted *by* the robot at ``frame`` (``J`` in the same convention as the wrench).
        """
        J = self.jacobian(q, frame, expressed_in)
        return (np.swapaxes(J, -1, -2) @ np.asarray(wrench, dtype=float)[..., None])[..., 0]

    # --- inverse kinematics -------------------------------------------------------------------

    def ik_chain(self, frame):
        """The :class:`~ros_dynamics.engine.ik.Chain` of ``frame`` (built once, then cached)."""
        chain = self._ik_chains.get(frame)
        if chain is None:
            chain = self._ik_chains[frame] = ik.Chain(self, frame)
        return chain

    def prepare_ik(self, tip_frame, samples=20000, rng=0):
        """Build the seed table of ``tip_frame`` (:mod:`~ros_dynamics.engine.ik_seeds`):
        ``samples`` configurations inside the limits indexed by the frame's pose, from which
        later :meth:`solve_ik` calls start next to their targets. A one-time cost (20-50 ms
        and about 3 MB for 20,000 samples of a 7-joint arm) that makes most solves about twice
        as fast and rarely-solved targets reliable. ``rng``: seed or generator of the samples.
        """
        if int(samples) < 1:
            raise InvalidInputError(f'samples: expected >= 1, got {samples}')
        chain = self.ik_chain(tip_frame)
        table = ik_seeds.SeedTable(chain, chain.lower, chain.upper, int(samples),
                                   np.random.default_rng(rng))
        self._ik_seeds[tip_frame] = table
        return table

    def ik_seed_table(self, frame):
        """The seed table :meth:`prepare_ik` built for ``frame``, or None."""
        return self._ik_seeds.get(frame)

    def solve_ik(self, tip_frame, T_target, q_seed=None, *, position_tolerance=1e-5,
                 orientation_tolerance=1e-5, position_only=False, weights=None, timeout=0.005,
                 max_solutions=1, rng=None):
        """Numerical IK of ``tip_frame`` to ``T_target`` (4x4 in the root frame); see
        :func:`ros_dynamics.engine.ik.solve_ik` and :class:`~ros_dynamics.engine.ik.IKResult`.
        """
        return ik.solve_ik(self, tip_frame, T_target, q_seed,
                           position_tolerance=position_tolerance,
                           orientation_tolerance=orientation_tolerance,
                           position_only=position_only, weights=weights, timeout=timeout,
                           max_solutions=max_solutions, rng=rng)
