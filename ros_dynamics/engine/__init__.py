"""The ros_dynamics engine: rigid-body kinematics and dynamics in pure NumPy.

Importable without ROS::

    from ros_dynamics.engine import IKSolver, RobotModel
    m = RobotModel.from_urdf_file('robot.urdf')
    tau = m.gravity_torques(q)
    r = IKSolver(m).solve('tool0', T_world_target, q_seed)

Conventions, written once: 6-vectors are ``[linear; angular]`` (:mod:`.spatial`); ``T_a_b`` is
the pose of frame b in frame a; *world* is the fixed frame results refer to (the root link's
frame for a fixed base, the frame a floating base moves in otherwise); quaternions carry their
order in their name (``quat_xyzw`` as in ROS messages); SI units (REP 103).

Layout, one module per job: ``rotations``, ``spatial`` (SE(3), spatial algebra, inertia
lumping); ``joints`` (one joint model per type); ``tree`` / ``urdf`` / ``dh`` (building a
model); ``model`` (the model, built once and never written) and ``settings`` (its run-time
dynamic settings, one immutable value); ``kinematics``, ``jacobians``, ``rnea``,
``rnea_batch``, ``crba``, ``aba``, ``centroidal``, ``contacts`` (algorithms); ``regressors``
(inertial-parameter regressors), ``differentiation`` (smooth derivatives of recordings),
``identification`` (payloads), ``observers`` (external torques and wrenches, collisions);
``ik_chain``, ``ik_seeds``, ``ik_search``, ``ik`` (the :class:`IKSolver`), ``planar_ik``;
``inertia``, ``meshes`` (mass properties); ``rigid_body``; ``checks`` (argument checks).
"""
from .contacts import ContactTorques
from .exceptions import (
                         DynamicsError,
                         InertiaError,
                         InertiaWarning,
                         InsufficientExcitationError,
                         InvalidInputError,
                         MeshError,
                         ModelError,
                         ShapeError,
                         StanceError,
                         UnknownFrameError,
                         UnknownJointError,
                         UnknownNameError,
                         UrdfError,
)
from .identification import PayloadEstimate, identify_payload, identify_payload_from_positions
from .ik import IKResult, IKSolver
from .inertia import MassProperties, mass_properties
from .kinematics import KinematicState, RelativeMotion
from .meshes import mesh_mass_properties
from .model import RobotModel
from .observers import (
                        MomentumObserver,
                        WrenchEstimate,
                        collision_thresholds,
                        external_wrench,
                        joints_in_collision,
)
from .rigid_body import euler_angular_acceleration
from .settings import DEFAULT_GRAVITY, DynamicSettings, Payload

__all__ = [
    'ContactTorques', 'DEFAULT_GRAVITY', 'DynamicSettings', 'DynamicsError', 'IKResult',
    'IKSolver', 'InertiaError', 'InertiaWarning', 'InsufficientExcitationError',
    'InvalidInputError', 'KinematicState', 'MassProperties', 'MeshError', 'ModelError',
    'MomentumObserver', 'Payload', 'PayloadEstimate', 'RelativeMotion', 'RobotModel',
    'mass_properties', 'mesh_mass_properties', 'ShapeError', 'StanceError', 'UnknownFrameError',
    'UnknownJointError', 'UnknownNameError', 'UrdfError', 'WrenchEstimate',
    'collision_thresholds', 'euler_angular_acceleration', 'external_wrench', 'identify_payload',
    'identify_payload_from_positions', 'joints_in_collision',
]
