""":class:`RobotModel`: the robot model with the engine's algorithms as methods.

The top of the engine, a thin convenience layer that no engine module imports: a
:class:`RobotModel` is a :class:`~ros_dynamics.engine.model.Model` (the description, which
imports no algorithm) whose methods are one-line entry points into the algorithm modules, as
Pinocchio's ``RobotWrapper`` sits on top of its model and free functions.

Each method runs one forward-kinematics pass for its arguments
(:func:`~ros_dynamics.engine.kinematics.forward_kinematics`) and hands it to the algorithm module
that does the work; none holds state or writes to the model. A caller who needs several results for
one state computes the pass once (``state = model.kinematics(q, qd)``) and calls the modules'
functions on it. Every method accepts a leading batch dimension, ``q`` of shape ``(..., nq)``,
velocities, accelerations and torques of shape ``(..., nv)``.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Optional

import numpy as np

from . import (
    aba,
    centroidal,
    configuration,
    contacts,
    crba,
    identification,
    jacobians,
    kinematics,
    observers,
    regressors,
    rnea,
    rnea_batch,
)
from .exceptions import ShapeError
from .model import Model

ArrayLike = Any


class RobotModel(Model):
    """Kinematic tree of a robot, fixed or floating base, with its dynamic parameters and the
    engine's algorithms as methods (see the module docstring and
    :class:`~ros_dynamics.engine.model.Model` for the attributes).

    Build it with :meth:`from_urdf_file`, :meth:`from_urdf_string`, :meth:`from_urdf_model` (a
    description urdf_parser_py read) or :meth:`from_dh`. Every
    method taking ``q`` accepts a leading batch dimension, ``q`` of shape ``(..., nq)`` and
    velocities of shape ``(..., nv)``.
    """

    # --- configurations (:mod:`~ros_dynamics.engine.configuration`) -----------------------

    def q_from_names(self, names: Sequence[str], positions: ArrayLike,
                     default: Optional[ArrayLike] = None, *,
                     ignore_unknown: bool = False) -> np.ndarray:
        """``q`` (nq,) from (name, position) pairs merged onto ``default`` (:meth:`neutral` if
        None); see :func:`~ros_dynamics.engine.configuration.q_from_names`.
        """
        return configuration.q_from_names(self, names, positions, default,
                                          ignore_unknown=ignore_unknown)

    def joint_state_from_q(self, q: ArrayLike) -> tuple[list[str], list[float]]:
        """``(names, positions)`` of the actuated joints for one ``q`` (nq,)."""
        return configuration.joint_state_from_q(self, q)

    def middle_configuration(self) -> np.ndarray:
        """Middle of the joint limits (nq,) (0 for unbounded joints, identity for floating and
        planar joints).
        """
        return configuration.middle_configuration(self)

    def neutral(self) -> np.ndarray:
        """The description's pose (nq,), Pinocchio's ``neutral``."""
        return configuration.neutral(self)

    def random_configuration(self, rng=None, size: Optional[int] = None) -> np.ndarray:
        """Configurations (nq,) or (size, nq) drawn inside the limits; ``rng``: seed or
        ``numpy.random.Generator``.
        """
        return configuration.random_configuration(self, rng, size)

    def integrate(self, q: ArrayLike, v: ArrayLike, dt: float = 1.0) -> np.ndarray:
        """The configuration (..., nq) reached from ``q`` moving at ``v`` (..., nv) for ``dt``
        [s] (the exponential map for floating and planar joints).
        """
        return configuration.integrate(self, q, v, dt)

    def difference(self, q0: ArrayLike, q1: ArrayLike) -> np.ndarray:
        """The velocity (..., nv) that moves ``q0`` to ``q1`` in unit time."""
        return configuration.difference(self, q0, q1)

    # --- kinematics ---------------------------------------------------------------------------

    def kinematics(self, q: ArrayLike, qd: Optional[ArrayLike] = None,
                   qdd: Optional[ArrayLike] = None) -> kinematics.KinematicState:
        """One forward-kinematics pass (:class:`~ros_dynamics.engine.kinematics.KinematicState`)
        to read several results from.
        """
        return kinematics.forward_kinematics(self, q, qd, qdd)

    def frame_pose(self, q: ArrayLike, frame) -> np.ndarray:
        """``T_world_frame`` (..., 4, 4): pose of ``frame`` in the world frame."""
        return self.kinematics(q).frame_pose(frame)

    def frame_poses(self, q: ArrayLike) -> np.ndarray:
        """``T_world_frame`` of every frame (..., n_frames, 4, 4), in :attr:`frame_names`
        order.
        """
        return self.kinematics(q).frame_poses()

    def jacobian(self, q: ArrayLike, frame, expressed_in: str = 'local_world_aligned',
                 point: Optional[ArrayLike] = None) -> np.ndarray:
        """Geometric Jacobian (..., 6, nv) of ``frame`` (rows ``[linear; angular]``); see
        :mod:`ros_dynamics.engine.jacobians` for the three conventions.
        """
        return jacobians.frame_jacobian(self.kinematics(q), frame, expressed_in, point)

    def jacobian_time_derivative(self, q: ArrayLike, qd: ArrayLike, frame,
                                 expressed_in: str = 'local_world_aligned',
                                 point: Optional[ArrayLike] = None) -> np.ndarray:
        """Time derivative (..., 6, nv) of :meth:`jacobian` along the motion (q, qd)."""
        return jacobians.jacobian_time_derivative(self.kinematics(q, qd), frame, expressed_in,
                                                  point)

    def jacobian_drift(self, q: ArrayLike, qd: ArrayLike, frame,
                       expressed_in: str = 'local_world_aligned',
                       point: Optional[ArrayLike] = None) -> np.ndarray:
        """Drift term ``Jdot qd`` (..., 6): the acceleration at ``qdd = 0``."""
        state = self.kinematics(q, qd)
        Jdot = jacobians.jacobian_time_derivative(state, frame, expressed_in, point)
        return (Jdot @ state.qd[..., None])[..., 0]

    def frame_twist(self, q: ArrayLike, qd: ArrayLike, frame,
                    expressed_in: str = 'local_world_aligned',
                    point: Optional[ArrayLike] = None) -> np.ndarray:
        """Twist (..., 6) ``[v; w]`` of ``frame`` in the chosen convention."""
        return jacobians.frame_velocity(self.kinematics(q, qd), frame, expressed_in, point)

    def frame_acceleration(self, q: ArrayLike, qd: ArrayLike, qdd: ArrayLike, frame,
                           expressed_in: str = 'local_world_aligned',
                           point: Optional[ArrayLike] = None,
                           kind: str = 'classical') -> np.ndarray:
        """Acceleration (..., 6) of ``frame``; classical by default (linear part = p'')."""
        return jacobians.frame_acceleration(self.kinematics(q, qd, qdd), frame, expressed_in,
                                            point, kind)

    def relative_motion(self, q: ArrayLike, qd: ArrayLike, qdd: ArrayLike, frame_i, frame_j,
                        observer, expressed_in) -> kinematics.RelativeMotion:
        """Motion of ``frame_i`` relative to ``frame_j`` as observed from the moving frame
        ``observer`` and expressed in the axes of ``expressed_in``
        (:class:`~ros_dynamics.engine.kinematics.RelativeMotion`).
        """
        return kinematics.relative_motion(self.kinematics(q, qd, qdd), frame_i, frame_j,
                                          observer, expressed_in)

    # --- dynamics -----------------------------------------------------------------------------

    def inverse_dynamics(self, q: ArrayLike, qd: ArrayLike, qdd: ArrayLike,
                         f_ext: Optional[dict[str, ArrayLike]] = None, *,
                         f_ext_frame: str = 'world', friction: bool = False) -> np.ndarray:
        """Joint torques/forces (..., nv) for the motion (q, qd, qdd) by Newton-Euler (RNEA).

        ``f_ext``: dict frame -> wrench ``[force; torque]`` (6,) or (..., 6) [N, N m] applied to
        that frame, expressed in the world frame at the frame's origin
        (``f_ext_frame='world'``) or in the frame's own axes (``'local'``). ``friction=True``
        adds the settings' viscous damping and Coulomb friction.

        Many states at once (a trajectory) without ``f_ext`` run through
        :mod:`~ros_dynamics.engine.rnea_batch`, which is built for long batches of one-DOF
        joints; models with floating or planar joints take the general batched path.
        """
        q = kinematics.as_configuration(self, q)
        states = q[..., 0].size if self.nq else 0
        if f_ext or q.ndim < 2 or states < rnea_batch.min_states(self) or self.has_multi_dof:
            state = kinematics.forward_kinematics(self, q, qd, qdd, check=False)  # q checked
            return rnea.inverse_dynamics(self, state, f_ext, f_ext_frame, friction=friction)
        batch = q.shape[:-1]
        qd = kinematics.as_velocity(self, qd, 'qd', batch)
        qdd = kinematics.as_velocity(self, qdd, 'qdd', batch)
        tau = rnea_batch.inverse_dynamics(self, q.reshape(states, self.nq),
                                          qd.reshape(states, self.nq),
                                          qdd.reshape(states, self.nq), friction=friction)
        return tau.reshape(q.shape)

    def gravity_torques(self, q: ArrayLike) -> np.ndarray:
        """Torques (..., nv) that hold the robot still against gravity (payloads included)."""
        return rnea.gravity_torques(self, self.kinematics(q))

    def bias_torques(self, q: ArrayLike, qd: ArrayLike) -> np.ndarray:
        """Coriolis, centrifugal and gravity torques ``C(q, qd) qd + g(q)`` (..., nv)."""
        return rnea.bias_torques(self, self.kinematics(q, qd))

    def coriolis_matrix(self, q: ArrayLike, qd: ArrayLike) -> np.ndarray:
        """Coriolis matrix (..., nv, nv) with ``C qd`` the velocity torques and ``Mdot - 2C``
        skew-symmetric (the Christoffel-symbol factorisation).
        """
        return crba.coriolis_matrix(self, self.kinematics(q, qd))

    def mass_matrix(self, q: ArrayLike) -> np.ndarray:
        """Joint-space mass matrix (..., nv, nv), full and symmetric (CRBA), rotor inertia on
        the diagonal.
        """
        return crba.mass_matrix(self, self.kinematics(q))

    def forward_dynamics(self, q: ArrayLike, qd: ArrayLike, tau: ArrayLike,
                         f_ext: Optional[dict[str, ArrayLike]] = None, *,
                         f_ext_frame: str = 'world', friction: bool = False) -> np.ndarray:
        """Joint accelerations (..., nv) for torques ``tau`` (articulated-body algorithm)."""
        return aba.forward_dynamics(self, self.kinematics(q, qd), tau, f_ext, f_ext_frame,
                                    friction=friction)

    def kinetic_energy(self, q: ArrayLike, qd: ArrayLike) -> np.ndarray:
        """Kinetic energy [J] (...,) of the motion (rotor inertia included)."""
        return rnea.kinetic_energy(self, self.kinematics(q, qd))

    def potential_energy(self, q: ArrayLike) -> np.ndarray:
        """Gravitational potential energy [J] (...,), zero at the world origin."""
        return rnea.potential_energy(self, self.kinematics(q))

    def center_of_mass(self, q: ArrayLike) -> np.ndarray:
        """Center of mass (..., 3) [m] of the moving bodies (see :attr:`total_mass`) in the
        world frame.
        """
        return rnea.center_of_mass(self, self.kinematics(q))

    def center_of_mass_jacobian(self, q: ArrayLike) -> np.ndarray:
        """Jacobian (..., 3, nv) of :meth:`center_of_mass`."""
        return rnea.center_of_mass_jacobian(self, self.kinematics(q))

    def centroidal_momentum_matrix(self, q: ArrayLike) -> np.ndarray:
        """Centroidal momentum matrix ``A_G`` (..., 6, nv): ``h_G = A_G v``, rows ``[linear;
        angular]`` in world axes about the center of mass (Pinocchio's ``ccrba``).
        """
        return centroidal.centroidal_momentum_matrix(self, self.kinematics(q))

    def centroidal_momentum(self, q: ArrayLike, qd: ArrayLike) -> np.ndarray:
        """Centroidal momentum ``h_G`` (..., 6) ``[linear; angular]`` [kg m/s, kg m^2/s] in
        world axes about the center of mass.
        """
        return centroidal.centroidal_momentum(self, self.kinematics(q, qd))

    def contact_gravity_torques(self, q: ArrayLike, contact_frames: Sequence[str],
                                contact: str = 'point',
                                friction: Optional[float] = None) -> contacts.ContactTorques:
        """Torques of the actuated joints (and the contact forces) that hold a floating-base
        robot still at ``q`` standing on ``contact_frames``: ``contact='point'`` (forces) or
        ``'wrench'`` (forces and moments, a flat foot); least-norm forces, or inside friction
        cones of coefficient ``friction`` about the vertical. See
        :mod:`~ros_dynamics.engine.contacts`; :class:`~ros_dynamics.engine.exceptions.StanceError`
        when the contacts cannot hold the robot.
        """
        return contacts.contact_gravity_torques(self, self.kinematics(q), contact_frames, contact,
                                                friction)

    def wrench_torques(self, q: ArrayLike, frame, wrench: ArrayLike,
                       expressed_in: str = 'local_world_aligned') -> np.ndarray:
        """Joint torques ``J^T F`` (..., nv) that hold the wrench ``F = [force; torque]`` [N, N m]
        exerted *by* the robot at ``frame`` (``J`` in the same convention as the wrench).
        """
        J = self.jacobian(q, frame, expressed_in)
        F = kinematics.as_finite_array(wrench, 'wrench')
        if F.shape[-1:] != (6,):
            raise ShapeError(f'wrench: expected 6 values [force; torque], got shape {F.shape}')
        return (np.swapaxes(J, -1, -2) @ F[..., None])[..., 0]

    # --- inertial parameters ------------------------------------------------------------------

    def joint_torque_regressor(self, q: ArrayLike, v: ArrayLike, a: ArrayLike) -> np.ndarray:
        """Regressor ``Y`` (..., nv, 10 * n_moving) with ``Y @ inertial_parameters()`` the
        inverse dynamics without rotor inertia and friction
        (:func:`~ros_dynamics.engine.regressors.joint_torque_regressor`).
        """
        return regressors.joint_torque_regressor(self, q, v, a)

    def payload_regressor(self, frame, q: ArrayLike, v: ArrayLike, a: ArrayLike) -> np.ndarray:
        """Regressor (..., nv, 10) of a rigid payload fixed to ``frame``
        (:func:`~ros_dynamics.engine.regressors.payload_regressor`).
        """
        return regressors.payload_regressor(self, frame, q, v, a)

    def inertial_parameters(self) -> np.ndarray:
        """Inertial parameters (10 * n_moving,) of the moving bodies, payloads included
        (:func:`~ros_dynamics.engine.regressors.inertial_parameters`).
        """
        return regressors.inertial_parameters(self)

    def identify_payload(self, frame, q: ArrayLike, v: ArrayLike, a: ArrayLike, tau: ArrayLike,
                         **options) -> identification.PayloadEstimate:
        """The rigid payload on ``frame`` that explains measured efforts ``tau`` (n, nv) along
        the joint states (q, v, a) (:func:`~ros_dynamics.engine.identification.identify_payload`,
        where the ``options`` are described).
        """
        return identification.identify_payload(self, frame, q, v, a, tau, **options)

    # --- external forces ----------------------------------------------------------------------

    def external_wrench(self, q: ArrayLike, tau_ext: ArrayLike, frame,
                        **options) -> observers.WrenchEstimate:
        """The wrench at ``frame`` (world axes, at its origin) that explains the external
        torques ``tau_ext`` (..., nv) best (:func:`~ros_dynamics.engine.observers.external_wrench`,
        where the ``options`` are described).
        """
        return observers.external_wrench(self, q, tau_ext, frame, **options)
