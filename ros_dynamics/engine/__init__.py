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

Layers, from the bottom (a module imports only from its own layer or the ones below, and the
imports form no cycle; :data:`LAYERS` lists them and ``test/test_engine_layers.py`` checks it):

1. *foundations* -- ``exceptions``, ``checks`` (argument checks), ``rotations``,
   ``subproblems`` (the Paden-Kahan subproblems of analytic IK), ``spatial``
   (SE(3), spatial algebra, inertia lumping), ``joints`` (one joint model per type),
   ``rigid_body``;
2. *descriptions* -- ``tree`` / ``urdf`` / ``dh`` (reading and assembling a description),
   ``inertia``, ``meshes`` (mass properties of geometry);
3. *model* -- ``settings`` (the run-time dynamic settings, one immutable value), ``dof_tree``
   (the degrees of freedom and the sums along the tree) and ``model`` (:class:`Model`, built once
   and never written): a plain description that imports no algorithm;
4. *algorithms* -- free functions (and solver objects) that take the model as an argument:
   ``kinematics``, ``configuration``, ``jacobians``, ``rnea``, ``rnea_batch``, ``crba``, ``aba``,
   ``centroidal``, ``contacts``; ``regressors``, ``differentiation``, ``identification``
   (payloads), ``observers`` (external torques and wrenches, collisions); ``ik_chain``,
   ``ik_seeds``, ``ik_search``, ``ik_analytic``, ``ik_held``, ``ik_pairs``, ``ik_answers``,
   ``ik_requests``, ``ik_path``, ``ik`` (the :class:`IKSolver`), ``planar_ik``;
5. *facade* -- ``robot`` (:class:`RobotModel`: the model with the algorithms as methods, what
   users build), and this package, which loads its names lazily: importing
   ``ros_dynamics.engine.model`` loads no algorithm.
"""
from importlib import import_module

#: The engine's modules by layer, bottom first (see the package docstring).
LAYERS = (
    ('foundations', ('exceptions', 'checks', 'rotations', 'subproblems', 'spatial', 'joints',
                     'rigid_body')),
    ('descriptions', ('tree', 'urdf', 'dh', 'inertia', 'meshes')),
    ('model', ('settings', 'dof_tree', 'model')),
    ('algorithms', ('kinematics', 'configuration', 'jacobians', 'rnea', 'rnea_batch', 'crba',
                    'aba', 'centroidal', 'contacts', 'regressors', 'differentiation',
                    'identification', 'observers', 'ik_chain', 'ik_seeds', 'ik_search',
                    'ik_analytic', 'ik_held', 'ik_pairs', 'ik_answers', 'ik_requests',
                    'ik_path', 'ik', 'planar_ik')),
    ('facade', ('robot',)),
)

#: Public name -> the module that defines it, loaded on first use (PEP 562).
_HOMES = {
    'ContactTorques': 'contacts',
    **dict.fromkeys(('DynamicsError', 'InertiaError', 'InertiaWarning',
                     'InsufficientExcitationError', 'InvalidInputError', 'MeshError',
                     'ModelError', 'ShapeError', 'StanceError', 'UnknownFrameError',
                     'UnknownJointError', 'UnknownNameError', 'UrdfError'), 'exceptions'),
    **dict.fromkeys(('PayloadEstimate', 'identify_payload', 'identify_payload_from_positions'),
                    'identification'),
    **dict.fromkeys(('IKResult', 'IKSolver'), 'ik'),
    **dict.fromkeys(('MassProperties', 'mass_properties'), 'inertia'),
    **dict.fromkeys(('KinematicState', 'RelativeMotion'), 'kinematics'),
    'mesh_mass_properties': 'meshes',
    'Model': 'model',
    'RobotModel': 'robot',
    **dict.fromkeys(('MomentumObserver', 'WrenchEstimate', 'collision_thresholds',
                     'external_wrench', 'joints_in_collision'), 'observers'),
    'euler_angular_acceleration': 'rigid_body',
    **dict.fromkeys(('DEFAULT_GRAVITY', 'DynamicSettings', 'Payload'), 'settings'),
}

__all__ = sorted(_HOMES)


def __getattr__(name):
    """Load a public name's module on first use."""
    try:
        home = _HOMES[name]
    except KeyError:
        raise AttributeError(f'module {__name__!r} has no attribute {name!r}') from None
    value = getattr(import_module(f'{__name__}.{home}'), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_HOMES))
