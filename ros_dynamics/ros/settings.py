"""Parameters of the dynamics node: declared once, validated by one function, applied as one value.

:data:`PARAMETERS` lists every parameter with its default, description (unit included) and
range. :func:`declare_parameters` declares them on a node, the range in each
``ParameterDescriptor`` (``FloatingPointRange`` / ``IntegerRange`` for scalars, the constraints
of arrays in ``additional_constraints``). :func:`validate` checks a full set of values -- the
same function at start-up, when a robot description arrives and when a parameter changes -- and
turns them into one immutable :class:`NodeSettings`: everything the streaming path and the
services read, the engine's :class:`~ros_dynamics.engine.DynamicSettings` of the model included.
The node swaps that value in with a single assignment, and its dynamic part into the model with
another (``model.settings = settings.dynamics``).

Validation needs no running node: ``validate(values)`` checks what does not depend on a model,
``validate(values, model)`` also resolves frame and joint names and returns the settings.
"""
from dataclasses import dataclass
import math

import numpy as np
from rcl_interfaces.msg import FloatingPointRange, IntegerRange, ParameterDescriptor

from ..engine import DynamicsError, DynamicSettings, Payload

#: Output groups, each switched by a ``publish.<group>`` parameter.
OUTPUTS = ('gravity', 'poses', 'twists', 'jacobians', 'feedforward', 'markers')
#: Largest gravity magnitude accepted [m/s^2] (about 100 g: beyond any robot on any planet).
MAX_GRAVITY = 1000.0
#: Relative tolerance of the positive semi-definiteness of a payload inertia.
_PSD_TOLERANCE = 1e-9


class SettingsError(ValueError):
    """A parameter value the node cannot use; the message names the parameter."""

    def __init__(self, parameter, problem):
        super().__init__(f'parameter {parameter}: {problem}')
        self.parameter = parameter


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


PARAMETERS = (
    ParameterSpec('robot_description', '', 'URDF text of the robot (as robot_state_publisher '
                  'takes it); empty: use urdf_file, else the robot_description topic',
                  read_only=True),
    ParameterSpec('urdf_file', '', 'Path of a URDF file, used when robot_description is empty',
                  read_only=True),
    ParameterSpec('base_frame', '', 'Frame poses, twists and Jacobians are expressed in; '
                  'empty: the URDF root link'),
    ParameterSpec('tip_frames', [''], 'Frames whose poses (and twists, Jacobians, wrenches) '
                  'are handled; empty: the leaf links', constraints='frames of the model'),
    ParameterSpec('command_joints', [''], 'Joint order of the Float64MultiArray effort '
                  'commands (as the ForwardCommandController joints list); empty: the model '
                  'order', constraints='joints of the model'),
    ParameterSpec('gravity', [0.0, 0.0, -9.81], 'Gravity vector in the root frame', 'm/s^2',
                  constraints=f'3 finite values, magnitude <= {MAX_GRAVITY:g} m/s^2'),
    ParameterSpec('publish_rate', 0.0, 'Output rate; 0: on every joint state', 'Hz',
                  (0.0, 10000.0), read_only=True),
    *(ParameterSpec(f'publish.{output}', True, f'Publish the {output} outputs')
      for output in OUTPUTS),
    ParameterSpec('markers_rate', 10.0, 'Highest rate of the rviz markers', 'Hz',
                  (0.1, 1000.0)),
    ParameterSpec('friction', False, 'Add URDF <dynamics> viscous damping and Coulomb friction '
                  'to the feedforward torques'),
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
                  constraints='3 finite values'),
    ParameterSpec('payload.inertia', [0.0] * 6, 'Payload inertia about its center of mass, '
                  'ixx ixy ixz iyy iyz izz', 'kg m^2',
                  constraints='6 finite values of a positive semi-definite matrix'),
    ParameterSpec('strict_inertia', False, 'Refuse descriptions with physically impossible '
                  'inertials instead of warning', read_only=True),
    ParameterSpec('ik.tip_frame', '', 'Default tip frame of ~/solve_ik; empty: the first tip '
                  'frame', constraints='a frame of the model'),
    ParameterSpec('ik.position_tolerance', 1e-5, 'Default position tolerance of ~/solve_ik',
                  'm', (1e-9, 1.0)),
    ParameterSpec('ik.orientation_tolerance', 1e-5, 'Default orientation tolerance of '
                  '~/solve_ik', 'rad', (1e-9, math.pi)),
    ParameterSpec('ik.timeout', 0.05, 'Default time budget of ~/solve_ik', 's', (1e-4, 10.0)),
    ParameterSpec('ik.seed_samples', 20000, 'Configurations sampled once per IK tip frame to '
                  'start solves near their targets (the default tip at startup, others after '
                  'their first request); 0: random starts only', range=(0, 1_000_000),
                  read_only=True),
)
SPECS = {spec.name: spec for spec in PARAMETERS}


@dataclass(frozen=True)
class OutputSwitches:
    """Which output groups are published."""

    gravity: bool = True
    poses: bool = True
    twists: bool = True
    jacobians: bool = True
    feedforward: bool = True
    markers: bool = True


@dataclass(frozen=True)
class IKSettings:
    """Defaults of the ``~/solve_ik`` service: tip frame, tolerances [m] and [rad], time budget
    [s], and the configurations sampled per tip for its seed table (0: none).
    """

    tip_frame: str
    position_tolerance: float = 1e-5
    orientation_tolerance: float = 1e-5
    timeout: float = 0.05
    seed_samples: int = 20000


@dataclass(frozen=True, eq=False)
class NodeSettings:
    """Everything the node reads of its parameters, validated against one model."""

    tips: tuple                # tip frames
    base_frame: str            # frame poses, twists and Jacobians are expressed in
    base_fixed: bool           # True when the base frame is fixed to the root link
    command_joints: tuple      # joint order of the effort commands
    command_index: np.ndarray  # their indices in q (int, read-only)
    outputs: OutputSwitches
    friction: bool
    markers_rate: float        # [Hz]
    dynamics: DynamicSettings  # the engine's settings of the model: gravity, rotor inertia, payload
    ik: IKSettings


def declare_parameters(node):
    """Declare :data:`PARAMETERS` on ``node``; returns their values (name -> value).

    A start-up value outside its range is reported by the check :func:`validate` makes
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
            _check_range(spec, value)
            raise SettingsError(spec.name, _rclpy_reason(err, spec)) from None
        except ParameterException as err:             # a value of the wrong type
            raise SettingsError(spec.name, _rclpy_reason(err, spec)) from None
    return values


def parameter_values(node, changed=None):
    """Values of every parameter of ``node`` (name -> value), ``changed`` ones replaced."""
    values = {spec.name: node.get_parameter(spec.name).value for spec in PARAMETERS}
    values.update(changed or {})
    return values


def validate(values, model=None):
    """Check a full set of parameter values; with a model, the :class:`NodeSettings` they give.

    ``values`` maps every name of :data:`PARAMETERS` to its value. Without ``model`` only the
    checks that need no model run and None is returned. Raises :class:`SettingsError` naming the
    parameter at fault.
    """
    for spec in PARAMETERS:
        if spec.range is not None:
            _check_range(spec, values[spec.name])
    gravity = _gravity(values['gravity'])
    rotor = _rotor_lists(values)
    payload = _payload(values)
    if model is None:
        return None
    tips = tuple(_known_frames(model, 'tip_frames', _names(values['tip_frames']))
                 or model.leaf_frames)
    base = values['base_frame'] or model.root_link
    _known_frames(model, 'base_frame', [base])
    _known_frames(model, 'ik.tip_frame', _names([values['ik.tip_frame']]))
    command = tuple(_known_joints(model, 'command_joints', _names(values['command_joints']))
                    or model.joint_names)
    if payload is not None and payload.mass != 0:
        _known_frames(model, 'payload.frame', [payload.frame])
    else:
        payload = None
    try:
        dynamics = model.make_settings(gravity=gravity, rotor_inertia=_rotor_inertia(model, *rotor),
                                       payloads=[payload] if payload is not None else [])
    except DynamicsError as err:           # beyond the engine's own bounds
        raise SettingsError('payload' if 'payload' in str(err) else 'gravity', str(err)) from None
    ik = IKSettings(
        tip_frame=values['ik.tip_frame'] or (tips[0] if tips else ''),
        position_tolerance=float(values['ik.position_tolerance']),
        orientation_tolerance=float(values['ik.orientation_tolerance']),
        timeout=float(values['ik.timeout']), seed_samples=int(values['ik.seed_samples']))
    return NodeSettings(
        tips=tips, base_frame=base,
        base_fixed=bool(model.frame_body[model.frame_index(base)] == 0),
        command_joints=command,
        command_index=_read_only(np.array([model.joint_index(j) for j in command], dtype=int)),
        outputs=OutputSwitches(**{o: bool(values[f'publish.{o}']) for o in OUTPUTS}),
        friction=bool(values['friction']), markers_rate=float(values['markers_rate']),
        dynamics=dynamics, ik=ik)


# --- checks -------------------------------------------------------------------------------------

def _rclpy_reason(err, spec):
    return str(err).removesuffix(f': {spec.name}')


def _check_range(spec, value):
    low, high = spec.range
    if not (isinstance(value, (int, float)) and low <= value <= high):
        unit = f' {spec.unit}' if spec.unit else ''
        raise SettingsError(spec.name, f'expected a value in [{_number(low)}, {_number(high)}]'
                                       f'{unit}, got {value!r}')


def _number(x):
    return f'{x:,}' if isinstance(x, int) else f'{x:g}'


def _finite(name, value, count):
    """``value`` as a read-only float array of ``count`` finite numbers."""
    a = np.array(value, dtype=float).ravel()
    if a.size != count or not np.all(np.isfinite(a)):
        raise SettingsError(name, f'expected {count} finite values, got {list(value)}')
    return _read_only(a)


def _gravity(value):
    g = _finite('gravity', value, 3)
    # The largest component first: the norm of huge values would overflow.
    if np.max(np.abs(g)) > MAX_GRAVITY or np.linalg.norm(g) > MAX_GRAVITY:
        raise SettingsError('gravity', f'expected a magnitude <= {MAX_GRAVITY:g} m/s^2, got '
                                       f'{g.tolist()}')
    return g


def _rotor_lists(values):
    """Rotor inertia joints, values [kg m^2] and gear ratios (None: already reflected)."""
    joints = _names(values['rotor_inertia.joints'])
    inertias = list(values['rotor_inertia.values'])
    ratios = list(values['rotor_inertia.gear_ratios'])
    if not all(math.isfinite(v) and v >= 0 for v in inertias):
        raise SettingsError('rotor_inertia.values', f'expected finite values >= 0, got '
                                                    f'{inertias}')
    ratios = None if ratios == [0.0] else ratios
    if ratios is not None and not all(math.isfinite(n) and n != 0 for n in ratios):
        raise SettingsError('rotor_inertia.gear_ratios', f'expected [0.0] or finite non-zero '
                                                         f'values, got {ratios}')
    if joints:
        for name, got in (('rotor_inertia.values', inertias),
                          ('rotor_inertia.gear_ratios', ratios)):
            if got is not None and len(got) != len(joints):
                raise SettingsError(name, f'expected one entry per joint of '
                                          f'rotor_inertia.joints ({len(joints)}), got '
                                          f'{len(got)}')
    # Products, not powers: a float product overflows to Inf, a power raises.
    reflected = [v * (1.0 if ratios is None else ratios[k] * ratios[k])
                 for k, v in enumerate(inertias[:len(joints)])]
    if not all(math.isfinite(v) for v in reflected):
        raise SettingsError('rotor_inertia.gear_ratios', 'reflected inertia J_m N^2 is not '
                                                         'finite')
    return joints, reflected


def _rotor_inertia(model, joints, reflected):
    """Rotor inertia reflected at each joint of ``model`` (nq,) [kg m^2]."""
    out = np.zeros(model.nq)
    for joint, value in zip(_known_joints(model, 'rotor_inertia.joints', joints), reflected):
        out[model.joint_index(joint)] = value
    return out


def _payload(values):
    """The payload parameters checked (whatever the frame), or None without a frame."""
    mass = values['payload.mass']
    com = _finite('payload.com', values['payload.com'], 3)
    i = _finite('payload.inertia', values['payload.inertia'], 6)
    inertia = _read_only(np.array([[i[0], i[1], i[2]], [i[1], i[3], i[4]], [i[2], i[4], i[5]]]))
    eigenvalues = np.linalg.eigvalsh(inertia)
    if eigenvalues[0] < -_PSD_TOLERANCE * max(1.0, float(np.max(np.abs(inertia)))):
        raise SettingsError('payload.inertia', f'not positive semi-definite (principal '
                                               f'moments {eigenvalues.tolist()})')
    frame = values['payload.frame']
    return Payload(frame, float(mass), com, inertia) if frame else None


def _names(values):
    """A string-array parameter without its empty entries (``['']`` stands for none)."""
    return [s for s in values if s]


def _known_frames(model, parameter, frames):
    bad = [f for f in frames if f not in model.frame_names]
    if bad:
        raise SettingsError(parameter, f'unknown frames {bad}; valid: {list(model.frame_names)}')
    return frames


def _known_joints(model, parameter, joints):
    bad = [j for j in joints if j not in model.joint_names]
    if bad:
        raise SettingsError(parameter, f'unknown joints {bad}; valid: {list(model.joint_names)}')
    return joints


def _read_only(a):
    a.flags.writeable = False
    return a
