"""The ros_dynamics engine: rigid-body kinematics and dynamics in pure NumPy/SciPy.

Importable without ROS::

    from ros_dynamics.engine import RobotModel
    m = RobotModel.from_urdf_file('robot.urdf')
    tau = m.gravity_torques(q)

Conventions, written once: 6-vectors are ``[linear; angular]``; ``T_a_b`` is the pose of frame b
in frame a; quaternions carry their order in their name (``quat_xyzw`` as in ROS messages);
SI units (REP 103). One module per algorithm family: ``rotations``, ``spatial``, ``tree`` /
``urdf`` / ``dh`` (model building), ``kinematics``, ``jacobians``, ``rnea``, ``crba``, ``aba``,
``rigid_body``, ``ik`` / ``planar_ik``, ``inertia`` / ``meshes`` (mass properties).
"""
from .exceptions import (
                         DynamicsError,
                         InertiaError,
                         InertiaWarning,
                         InvalidInputError,
                         MeshError,
                         ModelError,
                         ShapeError,
                         UnknownFrameError,
                         UnknownJointError,
                         UnknownNameError,
                         UrdfError,
)
from .inertia import MassProperties, mass_properties
from .kinematics import KinematicState, RelativeMotion
from .meshes import mesh_mass_properties
from .model import DEFAULT_GRAVITY, Payload, RobotModel
from .rigid_body import euler_angular_acceleration

__all__ = [
    'DEFAULT_GRAVITY', 'DynamicsError', 'InertiaError', 'InertiaWarning', 'InvalidInputError',
    'KinematicState', 'MassProperties', 'MeshError', 'ModelError', 'Payload', 'RelativeMotion',
    'RobotModel', 'mass_properties', 'mesh_mass_properties',
    'ShapeError', 'UnknownFrameError', 'UnknownJointError', 'UnknownNameError', 'UrdfError',
    'euler_angular_acceleration',
]
