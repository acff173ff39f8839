"""Parameters of the dynamics node: each declared once with its default, description, unit and
range (:data:`PARAMETERS`); declaring them on a node and reading them back.

Validation of the values (against each other and a model) is :mod:`~ros_dynamics.ros.settings`.
"""
from dataclasses import dataclass
import math

from rcl_interfaces.msg import FloatingPointRange, IntegerRange, ParameterDescriptor

from .throttled_log import clip

#: Output groups, each switched by a ``publish.<group>`` parameter.
OUTPUTS = ('gravity', 'poses', 'twists', 'jacobians', 'feedforward', 'markers',
           'center_of_mass', 'momentum', 'external_torques', 'wrench_estimates')
#: Output groups off by default: the centroidal momentum needs velocities in every kinematics
#: pass (about 50 us per joint state on a 6-joint arm), worth it for floating bases.
OFF_BY_DEFAULT = ('momentum',)
#: Root joints a description may be built with ('' : the root link is fixed to the world).
ROOT_JOINTS = ('', 'floating', 'planar')
#: Contact kinds of ``contacts.type`` (the engine's ``contact_gravity_torques``).
CONTACT_TYPES = ('point', 'wrench')
#: Largest gravity magnitude accepted [m/s^2] (about 100 g: beyond any robot on any planet).
MAX_GRAVITY = 1000.0


class SettingsError(ValueError):
    """A parameter value the node cannot use; the message names the parameter."""

    def __init__(self, parameter, problem):
        super().__init__(clip(f'parameter {parameter}: {problem}'))
        self.parameter = parameter


#: Longest frame id (or frame_prefix) a parameter may hold.
MAX_FRAME_ID = 256


def check_frame_id(parameter, text, empty_ok=True):
    """Raise :class:`SettingsError` unless ``text`` can stand in a frame id: at most
    :data:`MAX_FRAME_ID` printable characters, no blanks (empty only if ``empty_ok``).
    """
    if not text and empty_ok:
        return
    if not text or len(text) > MAX_FRAME_ID or not text.isprintable() or \
            any(c.isspace() for c in text):
        raise SettingsError(parameter, f'expected a frame id of 1 to {MAX_FRAME_ID} printable '
                                       f'characters without blanks, got {text!r}')


@dataclass(frozen=True)
class ParameterSpec:
    """One parameter: name, default, description, unit, inclusive range of a scalar."""

    name: str
    default: object
    description: str
    unit: str = ''
    range: tuple = None            # (lowest, highest), both allowed
    read_only: bool = False
    constraints: str = ''          # what an array must hold, in words

    def descriptor(self):
        """The ``ParameterDescriptor`` of this parameter (range included)."""
        unit = f' [{self.unit}]' if self.unit else ''
        d = ParameterDescriptor(description=self.description + unit, read_only=self.read_only,
                                additional_constraints=self.constraints)
        if self.range is not None and isinstance(self.default, float):
            d.floating_point_range = [FloatingPointRange(
                from_value=float(self.range[0]), to_value=float(self.range[1]), step=0.0)]
        elif self.range is not None:
            d.integer_range = [IntegerRange(
                from_value=int(self.range[0]), to_value=int(self.range[1]), step=1)]
        return d


#: Parameters of a floating or planar base: where its state comes from, its contacts.
FLOATING_BASE_PARAMETERS = (
    ParameterSpec('world_frame', 'odom', 'Frame id of the world a floating or planar base moves '
                  "in: the odometry's header.frame_id, and the frame of center_of_mass and "
                  'momentum (a fixed base: the URDF root link instead)'),
    ParameterSpec('base_pose', [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0], 'Pose of the URDF root '
                  'link in world_frame, x y z qx qy qz qw, until odometry arrives', 'm',
                  constraints='7 finite values, positions at most 1e6 m, a unit quaternion'),
    ParameterSpec('odometry.timeout', 0.5, 'Age of the latest odometry after which it is '
                  'stale (still used, diagnostics WARN); 0: never stale', 's', (0.0, 86400.0)),
    ParameterSpec('contact_frames', [''], 'Frames touching the ground (feet): the gravity '
                  'torques of a floating or planar base hold the robot standing on them',
                  constraints='distinct frames of the model; needs root_joint'),
    ParameterSpec('contacts.type', 'point', "Contacts carry a force ('point') or a force and a "
                  "moment ('wrench', a flat foot)", constraints="'point' or 'wrench'"),
    ParameterSpec('contacts.friction', 0.0, 'Friction coefficient of unilateral contacts (the '
                  'forces inside friction cones about the vertical, an optimisation per state); '
                  '0: bilateral contacts, least-norm forces', range=(0.0, 100.0)),
)

#: Parameters of what the node makes of measured efforts: the momentum observer, the collision
#: signal and payload identification (issue 17).
EFFORT_PARAMETERS = (
    ParameterSpec('observer.gain', 50.0, 'Gain K of the momentum observer of external joint '
                  'torques (time constant 1/K: higher reacts faster and passes more noise)',
                  '1/s', (0.01, 10000.0)),
    ParameterSpec('observer.friction', False, 'Efforts are measured at the motors: subtract '
                  "the URDF's joint friction before the observer (leave false for joint-side "
                  'torque sensors)'),
    ParameterSpec('efforts.max_stamp_gap', 0.1, 'Longest time between the stamps of two joint '
                  'states with efforts; a longer gap, or a stamp going backwards, resets the '
                  'observer (counted) and cuts a payload recording short', 's', (1e-4, 60.0)),
    ParameterSpec('collision.threshold', 10.0, 'External torque above which a joint is in '
                  'collision, for joints not in collision.thresholds.joints', 'N m or N',
                  (1e-6, 1e6)),
    ParameterSpec('collision.thresholds.joints', [''], 'Joints with a threshold of their own',
                  constraints='actuated joints of the model, one per value'),
    ParameterSpec('collision.thresholds.values', [0.0], 'Their thresholds', 'N m or N',
                  constraints='finite values in [1e-6, 1e6], one per joint'),
    ParameterSpec('wrench_estimates.force_only', False, 'Estimate a force through each tip '
                  "frame's origin alone (arms with fewer than 6 joints) instead of a wrench"),
    ParameterSpec('identify.frame', '', 'Default frame of ~/identify_payload; empty: the IK '
                  'tip frame', constraints='a frame of the model moved by a joint'),
    ParameterSpec('identify.max_duration', 120.0, 'Longest recording a ~/identify_payload '
                  'request may ask for', 's', (0.1, 3600.0)),
    ParameterSpec('identify.max_samples', 200_000, 'Most joint states one recording keeps '
                  '(the recording ends when full)', range=(100, 10_000_000)),
    ParameterSpec('identify.max_condition', 100.0, 'Largest condition number of the mass and '
                  'center-of-mass regressor columns accepted (above: the motion does not '
                  'excite the payload enough)', range=(1.0, 1e6)),
)

PARAMETERS = (
    ParameterSpec('robot_description', '', 'URDF text of the robot (as robot_state_publisher '
                  'takes it); empty: use urdf_file, else the robot_description topic',
                  read_only=True),
    ParameterSpec('urdf_file', '', 'Path of a URDF file, used when robot_description is empty',
                  read_only=True),
    ParameterSpec('root_joint', '', "Joint between the world and the URDF root link, as "
                  "Pinocchio's root_joint: '' (fixed base), 'floating' or 'planar'; applied "
                  'when a description is built', read_only=True,
                  constraints="'', 'floating' or 'planar'"),
    *FLOATING_BASE_PARAMETERS,
    ParameterSpec('description.max_bytes', 20_000_000, 'Largest robot description accepted',
                  'bytes', (1, 2_000_000_000)),
    ParameterSpec('description.max_links', 10_000, 'Most links a robot description may have',
                  range=(1, 1_000_000)),
    ParameterSpec('description.max_joints', 10_000, 'Most joints a robot description may have',
                  range=(0, 1_000_000)),
    ParameterSpec('frame_prefix', '', 'Prefix of every frame id published (as '
                  "robot_state_publisher's frame_prefix, e.g. 'left/'); frame ids received "
                  'may carry it'),
    ParameterSpec('base_frame', '', 'Frame poses, twists and Jacobians are expressed in; '
                  'empty: the URDF root link'),
    ParameterSpec('tip_frames', [''], 'Frames whose poses (and twists, Jacobians, wrenches) '
                  'are handled; empty: one per end of a moving chain (see default_tips)',
                  constraints='frames of the model'),
    ParameterSpec('max_tip_frames', 100, 'Most tip frames (each has 4 publishers and a '
                  'subscription); a model with more default tips needs tip_frames',
                  range=(1, 10_000)),
    ParameterSpec('command_joints', [''], 'Joint order of the Float64MultiArray effort '
                  'commands (as the ForwardCommandController joints list); empty: the model '
                  'order', constraints='joints of the model'),
    ParameterSpec('require_all_joints', False, 'Publish nothing until every joint of the model '
                  'has been heard of (else outputs flow once the joints they depend on are '
                  'known, joints never heard of at initial_positions)'),
    ParameterSpec('initial_positions.joints', [''], 'Joints with a position to assume until '
                  'they are heard of (others: 0 clamped into their limits)',
                  constraints='joints of the model, one per value'),
    ParameterSpec('initial_positions.values', [0.0], 'Those positions', 'rad or m',
                  constraints='finite values inside the joint limits, one per joint'),
    ParameterSpec('gravity', [0.0, 0.0, -9.81], 'Gravity vector in the world frame (the '
                  'root link\'s for a fixed base)', 'm/s^2',
                  constraints=f'3 finite values, magnitude <= {MAX_GRAVITY:g} m/s^2'),
    ParameterSpec('publish_rate', 0.0, 'Output rate; 0: on every joint state', 'Hz',
                  (0.0, 10000.0), read_only=True),
    *(ParameterSpec(f'publish.{output}', output not in OFF_BY_DEFAULT,
                    f'Publish the {output} outputs') for output in OUTPUTS),
    ParameterSpec('tip_outputs_rate', 100.0, 'Highest rate of the per-tip outputs (poses, '
                  'twists, Jacobians, wrench estimates), center_of_mass and momentum, on the '
                  'joint-state stamps; the torques, commands, external torques and collision '
                  'signal follow every joint state; 0: every joint state', 'Hz',
                  (0.0, 100000.0)),
    ParameterSpec('command.max_state_age', 0.1, 'Oldest joint state (node clock minus its '
                  'stamp) the gravity and feedforward commands are computed from; an older one, '
                  'or one stamped more than 1 s ahead of the node clock (from before the clock '
                  'went back), gets no command (counted as stale_states, diagnostics WARN); a '
                  'zero stamp counts as current; 0: no bound', 's', (0.0, 3600.0)),
    ParameterSpec('markers_rate', 10.0, 'Highest rate of the rviz markers', 'Hz',
                  (0.1, 1000.0)),
    ParameterSpec('friction', False, 'Add URDF <dynamics> viscous damping and Coulomb friction '
                  'to the feedforward torques'),
    ParameterSpec('trajectory.max_points', 100_000, 'Most points of a joint_trajectory',
                  range=(1, 10_000_000)),
    ParameterSpec('trajectory.max_joints', 10_000, 'Most joints of a joint_trajectory',
                  range=(1, 1_000_000)),
    ParameterSpec('rotor_inertia.joints', [''], 'Joints with rotor (armature) inertia',
                  constraints='joints of the model, one per value'),
    ParameterSpec('rotor_inertia.values', [0.0], 'Rotor inertia of those joints, motor side '
                  'when gear_ratios are given', 'kg m^2',
                  constraints='finite values >= 0, one per joint'),
    ParameterSpec('rotor_inertia.gear_ratios', [0.0], 'Gear ratios N of those joints (reflected '
                  'inertia J_m N^2); [0.0]: the values are already reflected',
                  constraints='[0.0], or finite non-zero values, one per joint'),
    ParameterSpec('payload.frame', '', 'Frame the payload is fixed to; empty: no payload'),
    ParameterSpec('payload.mass', 0.0, 'Payload mass; 0: no payload', 'kg', (0.0, 10000.0)),
    ParameterSpec('payload.com', [0.0, 0.0, 0.0], 'Payload center of mass in its frame', 'm',
                  constraints='3 finite values, each at most 1000 m'),
    ParameterSpec('payload.inertia', [0.0] * 6, 'Payload inertia about its center of mass, '
                  'ixx ixy ixz iyy iyz izz', 'kg m^2',
                  constraints='6 values of a positive semi-definite matrix, each at most 1e6'),
    ParameterSpec('strict_inertia', False, 'Refuse descriptions with physically impossible '
                  'inertials instead of warning', read_only=True),
    ParameterSpec('diagnostics.quiet_period', 10.0, 'Time without dropped or refused inputs '
                  'after which the status returns from WARN to OK', 's', (0.0, 86400.0)),
    ParameterSpec('ik.tip_frame', '', 'Default tip frame of ~/solve_ik; empty: the first tip '
                  'frame', constraints='a frame of the model'),
    ParameterSpec('ik.active_joints', [''], 'Joints ~/solve_ik may move when a request names '
                  'none (the others keep the seed); empty: every joint that moves the tip',
                  constraints='joints of the model'),
    ParameterSpec('ik.position_tolerance', 1e-5, 'Default position tolerance of ~/solve_ik; '
                  'also the largest a request may ask for is 1 m', 'm', (1e-9, 1.0)),
    ParameterSpec('ik.orientation_tolerance', 1e-5, 'Default orientation tolerance of '
                  '~/solve_ik; the largest a request may ask for is pi', 'rad', (1e-9, math.pi)),
    ParameterSpec('ik.timeout', 0.05, 'Default time budget of ~/solve_ik (at most '
                  'ik.max_timeout)', 's', (1e-4, 60.0)),
    ParameterSpec('ik.max_timeout', 1.0, 'Longest time budget a ~/solve_ik request may ask '
                  'for', 's', (1e-4, 60.0)),
    ParameterSpec('ik.seed_samples', 20000, 'Configurations sampled once per IK tip frame to '
                  'start solves near their targets (the default tip at startup, others after '
                  'their first request); 0: random starts only', range=(0, 1_000_000),
                  read_only=True),
    *EFFORT_PARAMETERS,
)
SPECS = {spec.name: spec for spec in PARAMETERS}


def declare_parameters(node):
    """Declare :data:`PARAMETERS` on ``node``; returns their values (name -> value).

    A start-up value outside its range is reported by the check :func:`check_range` makes
    (raises :class:`SettingsError`), not by rclpy's generic refusal.
    """
    from rclpy.exceptions import InvalidParameterValueException, ParameterException
    values = {}
    for spec in PARAMETERS:
        try:
            values[spec.name] = node.declare_parameter(
                spec.name, spec.default, spec.descriptor()).value
        except InvalidParameterValueException as err:
            # Declared without its range only to read the refused value and say what is wrong.
            value = node.declare_parameter(spec.name, spec.default).value
            check_range(spec, value)
            raise SettingsError(spec.name, _rclpy_reason(err, spec)) from None
        except ParameterException as err:             # a value of the wrong type
            raise SettingsError(spec.name, _rclpy_reason(err, spec)) from None
    return values


def parameter_values(node, changed=None):
    """Values of every parameter of ``node`` (name -> value), ``changed`` ones replaced
    (names not in :data:`PARAMETERS` are left out).
    """
    values = {spec.name: node.get_parameter(spec.name).value for spec in PARAMETERS}
    values.update({k: v for k, v in (changed or {}).items() if k in SPECS})
    return values


def check_range(spec, value):
    """Raise :class:`SettingsError` unless ``value`` is inside ``spec``'s range."""
    low, high = spec.range
    if not (isinstance(value, (int, float)) and low <= value <= high):
        unit = f' {spec.unit}' if spec.unit else ''
        raise SettingsError(spec.name, f'expected a value in [{_number(low)}, {_number(high)}]'
                                       f'{unit}, got {value!r}')


def _rclpy_reason(err, spec):
    return str(err).removesuffix(f': {spec.name}')


def _number(x):
    return f'{x:,}' if isinstance(x, int) else f'{x:g}'
