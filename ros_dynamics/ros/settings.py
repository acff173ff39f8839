"""Settings of the dynamics node: every parameter value validated by one function into one value.

:func:`validate` checks a full set of parameter values (:data:`PARAMETERS`, declared by
:mod:`~ros_dynamics.ros.parameters`) -- the same function at start-up, when a robot description
arrives and when a parameter changes -- and turns them into one immutable :class:`NodeSettings`:
everything the streaming path and the services read, the engine's
:class:`~ros_dynamics.engine.DynamicSettings` of the model included. The node swaps that value in
with a single assignment, and its dynamic part into the model with another
(``model.settings = settings.dynamics``).

Validation needs no running node: ``validate(values)`` checks what does not depend on a model,
``validate(values, model)`` also resolves frame and joint names and returns the settings.
"""
from dataclasses import dataclass
import math

import numpy as np

from ..engine import DynamicsError, DynamicSettings, Payload
from ..engine.settings import LIMITS
from .base_settings import BaseSettings, validate_base
from .default_tips import default_tips
from .frame_names import topic_token
from .parameters import (  # noqa: F401
    MAX_GRAVITY,
    OUTPUTS,
    PARAMETERS,
    SPECS,
    SettingsError,
    check_frame_id,
    check_range,
)

#: Relative tolerance of the positive semi-definiteness of a payload inertia.
_PSD_TOLERANCE = 1e-9
#: Names listed in one error message before "and N more".
_LISTED = 20


@dataclass(frozen=True)
class OutputSwitches:
    """Which output groups are published."""

    gravity: bool = True
    poses: bool = True
    twists: bool = True
    jacobians: bool = True
    feedforward: bool = True
    markers: bool = True
    center_of_mass: bool = True
    momentum: bool = False
    external_torques: bool = True
    wrench_estimates: bool = True


@dataclass(frozen=True)
class IKSettings:
    """Defaults and bounds of the ``~/solve_ik`` service: tip frame, tolerances [m] and [rad],
    time budget and the longest one a request may ask for [s], the joints it may move (None:
    all that move the tip), and the configurations sampled per tip for its seed table (0: none).
    """

    tip_frame: str
    position_tolerance: float = 1e-5
    orientation_tolerance: float = 1e-5
    timeout: float = 0.05
    seed_samples: int = 20000
    max_timeout: float = 1.0
    active_joints: tuple = None
    max_position_tolerance: float = SPECS['ik.position_tolerance'].range[1]
    max_orientation_tolerance: float = SPECS['ik.orientation_tolerance'].range[1]


@dataclass(frozen=True, eq=False)
class EffortSettings:
    """What the node makes of measured efforts: the observer's gain [1/s] and friction switch,
    the longest stamp gap [s], the collision thresholds (n_actuated,) [N m or N] of the model's
    actuated joints, force-only wrench estimates, and the bounds of ``~/identify_payload``
    (default frame, '' for the IK tip; longest recording [s]; most samples; largest condition
    number).
    """

    gain: float
    friction: bool
    max_stamp_gap: float
    thresholds: np.ndarray
    force_only: bool
    identify_frame: str
    identify_max_duration: float
    identify_max_samples: int
    identify_max_condition: float


@dataclass(frozen=True)
class InputLimits:
    """Bounds of the inputs that need no model: descriptions and trajectories."""

    description_bytes: int = SPECS['description.max_bytes'].default
    description_links: int = SPECS['description.max_links'].default
    description_joints: int = SPECS['description.max_joints'].default
    trajectory_points: int = SPECS['trajectory.max_points'].default
    trajectory_joints: int = SPECS['trajectory.max_joints'].default


@dataclass(frozen=True, eq=False)
class NodeSettings:
    """Everything the node reads of its parameters, validated against one model."""

    tips: tuple                # tip frames
    tip_tokens: tuple          # their topic tokens (poses/<token>, ...), distinct
    tip_joints: tuple          # per tip, the actuated joints (bool) its outputs depend on
    base_frame: str            # frame poses, twists and Jacobians are expressed in
    base_fixed: bool           # True when the base frame is fixed to the world
    frame_prefix: str          # robot_state_publisher's frame_prefix
    command_joints: tuple      # joint order of the effort commands (actuated joints)
    command_index: np.ndarray  # their indices in model.actuated_joint_names (int, read-only)
    outputs: OutputSwitches
    friction: bool
    markers_rate: float        # [Hz]
    tip_outputs_rate: float    # [Hz] of the per-tip outputs; 0: every joint state
    max_state_age: float       # [s] oldest joint state commands are computed from; 0: no bound
    require_all_joints: bool   # publish nothing before every joint was heard of
    initial_q: np.ndarray      # (nq,) positions of joints never heard of (read-only); floating
    #                            and planar joints at their neutral
    quiet_period: float        # [s] without problems before WARN returns to OK
    limits: InputLimits
    dynamics: DynamicSettings  # the engine's settings of the model: gravity, rotor inertia, payload
    ik: IKSettings
    effort: EffortSettings     # observer, collision signal, payload identification
    base: BaseSettings = BaseSettings()   # root joint, base state, contacts


def input_limits(values):
    """:class:`InputLimits` of a full set of parameter values."""
    return InputLimits(*(int(values[name]) for name in (
        'description.max_bytes', 'description.max_links', 'description.max_joints',
        'trajectory.max_points', 'trajectory.max_joints')))


def validate(values, model=None):
    """Check a full set of parameter values; with a model, the :class:`NodeSettings` they give.

    ``values`` maps every name of :data:`PARAMETERS` to its value. Without ``model`` only the
    checks that need no model run and None is returned. Raises :class:`SettingsError` naming the
    parameter at fault.
    """
    for spec in PARAMETERS:
        if spec.range is not None:
            check_range(spec, values[spec.name])
    check_frame_id('frame_prefix', values['frame_prefix'])
    if values['ik.timeout'] > values['ik.max_timeout']:
        raise SettingsError('ik.timeout', f'expected at most ik.max_timeout '
                                          f'({values["ik.max_timeout"]:g} s), got '
                                          f'{values["ik.timeout"]:g} s')
    gravity = _gravity(values['gravity'])
    rotor = _rotor_lists(values)
    payload = _payload(values)
    initial = _pairs(values, 'initial_positions')
    base_settings = validate_base(values, model)
    thresholds = _pairs(values, 'collision.thresholds')
    if model is None:
        return None
    tips = tuple(_known_frames(model, 'tip_frames', _names(values['tip_frames']))
                 or default_tips(model))
    _tip_count(tips, values)
    tokens = _tokens(tips)
    base = values['base_frame'] or model.root_link
    _known_frames(model, 'base_frame', [base])
    _known_frames(model, 'ik.tip_frame', _names([values['ik.tip_frame']]))
    command = tuple(_known_joints(model, 'command_joints', _names(values['command_joints']))
                    or model.actuated_joint_names)
    actuated = {name: k for k, name in enumerate(model.actuated_joint_names)}
    active = tuple(_known_joints(model, 'ik.active_joints', _names(values['ik.active_joints'])))
    if payload is not None:                # a frame named is checked, whatever the mass
        _known_frames(model, 'payload.frame', [payload.frame])
        if payload.mass == 0:
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
        timeout=float(values['ik.timeout']), seed_samples=int(values['ik.seed_samples']),
        max_timeout=float(values['ik.max_timeout']), active_joints=active or None)
    base_joints = joints_moving(model, base)
    a = model.actuated_v_index
    return NodeSettings(
        tips=tips, tip_tokens=tokens,
        tip_joints=tuple(_read_only((joints_moving(model, tip) | base_joints)[a])
                         for tip in tips),
        base_frame=base, base_fixed=bool(model.frame_body[model.frame_index(base)] == 0),
        frame_prefix=values['frame_prefix'],
        command_joints=command,
        command_index=_read_only(np.array([actuated[j] for j in command], dtype=int)),
        outputs=OutputSwitches(**{o: bool(values[f'publish.{o}']) for o in OUTPUTS}),
        friction=bool(values['friction']), markers_rate=float(values['markers_rate']),
        tip_outputs_rate=float(values['tip_outputs_rate']),
        max_state_age=float(values['command.max_state_age']),
        require_all_joints=bool(values['require_all_joints']),
        initial_q=_initial_q(model, initial),
        quiet_period=float(values['diagnostics.quiet_period']),
        limits=input_limits(values), dynamics=dynamics, ik=ik,
        effort=_effort(model, values, thresholds), base=base_settings)


def joints_moving(model, frame):
    """(nv,) bool: the velocity coordinates (independent joints, so mimic leaders) that move
    ``frame``.
    """
    dofs = np.flatnonzero(model.dof_mask(model.frame_body[model.frame_index(frame)]))
    return np.any(model.rate_matrix(dofs) != 0, axis=0)


def _effort(model, values, thresholds):
    """:class:`EffortSettings` of the values, thresholds per actuated joint of ``model``."""
    frame = values['identify.frame']
    if frame:
        _known_frames(model, 'identify.frame', [frame])
        if model.frame_body[model.frame_index(frame)] == 0:
            raise SettingsError('identify.frame', f'{frame!r} is fixed to the base; no joint '
                                                  'carries a payload on it')
    low, high = SPECS['collision.threshold'].range
    per_joint = np.full(len(model.actuated_joint_names), float(values['collision.threshold']))
    joints, limits = thresholds
    for joint, limit in zip(_known_joints(model, 'collision.thresholds.joints', joints),
                            limits):
        if not low <= limit <= high:
            raise SettingsError('collision.thresholds.values', f'{joint}: expected a threshold '
                                f'in [{low:g}, {high:g}] N m or N, got {limit:g}')
        per_joint[model.actuated_joint_names.index(joint)] = limit
    return EffortSettings(
        gain=float(values['observer.gain']), friction=bool(values['observer.friction']),
        max_stamp_gap=float(values['efforts.max_stamp_gap']), thresholds=_read_only(per_joint),
        force_only=bool(values['wrench_estimates.force_only']), identify_frame=frame,
        identify_max_duration=float(values['identify.max_duration']),
        identify_max_samples=int(values['identify.max_samples']),
        identify_max_condition=float(values['identify.max_condition']))


# --- checks -------------------------------------------------------------------------------------

def _finite(name, value, count, limit=math.inf):
    """``value`` as a read-only float array of ``count`` finite numbers of magnitude <= limit."""
    a = np.array(value, dtype=float).ravel()
    if a.size != count or not np.all(np.abs(a) <= limit):
        bound = '' if limit == math.inf else f' of magnitude <= {limit:g}'
        raise SettingsError(name, f'expected {count} finite values{bound}, got '
                                  f'{_listed(list(value))}')
    return _read_only(a)


def _listed(items):
    """``items`` written out, at most :data:`_LISTED` of them."""
    items = list(items)
    if len(items) <= _LISTED:
        return str(items)
    return f'{items[:_LISTED]} and {len(items) - _LISTED} more'


def _tip_count(tips, values):
    limit = values['max_tip_frames']
    if len(tips) > limit:
        which = 'tip_frames' if _names(values['tip_frames']) else 'tip_frames (empty: the leaves)'
        raise SettingsError(which, f'{len(tips)} tip frames, more than max_tip_frames '
                                   f'({limit}); name the tips wanted in tip_frames')


def _tokens(tips):
    """Topic tokens of the tips, refused if two coincide (a 64-bit hash collision)."""
    tokens = tuple(topic_token(t) for t in tips)
    if len(set(tokens)) != len(tokens):
        seen = {}
        for tip, token in zip(tips, tokens):
            if token in seen:
                raise SettingsError('tip_frames', f'frames {seen[token]!r} and {tip!r} map to '
                                                  f'the same topic name {token!r}')
            seen[token] = tip
    return tokens


def _pairs(values, prefix):
    """Joints and values of a ``<prefix>.joints`` / ``<prefix>.values`` pair, checked."""
    joints = _names(values[f'{prefix}.joints'])
    numbers = list(values[f'{prefix}.values'])
    if joints and len(numbers) != len(joints):
        raise SettingsError(f'{prefix}.values', f'expected one value per joint of '
                                                f'{prefix}.joints ({len(joints)}), got '
                                                f'{len(numbers)}')
    if len(set(joints)) != len(joints):
        raise SettingsError(f'{prefix}.joints', 'a joint is named twice')
    return joints, _finite(f'{prefix}.values', numbers, len(numbers), 1e100)[:len(joints)]


def _initial_q(model, pairs):
    """Positions (nq,) of joints never heard of: the initial positions given, else 0 clamped
    into the limits (floating and planar joints at their neutral); a given one outside its
    limits is refused.
    """
    q = model.neutral()
    a = model.actuated_q_index
    q[a] = np.clip(0.0, model.lower_limits[a], model.upper_limits[a])
    joints, positions = pairs
    for joint, x in zip(_known_joints(model, 'initial_positions.joints', joints), positions):
        i = model.joint_idx_q[model.joint_index(joint)]
        if not model.lower_limits[i] <= x <= model.upper_limits[i]:
            raise SettingsError('initial_positions.values', f'{joint}: {x:g} is outside its '
                                f'limits [{model.lower_limits[i]:g}, {model.upper_limits[i]:g}]')
        q[i] = x
    return _read_only(q)


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
    if not all(0 <= v <= LIMITS['rotor_inertia'] for v in inertias):
        raise SettingsError('rotor_inertia.values', f'expected values in [0, '
                                                    f'{LIMITS["rotor_inertia"]:g}], got '
                                                    f'{_listed(inertias)}')
    ratios = None if ratios == [0.0] else ratios
    if ratios is not None and not all(math.isfinite(n) and n != 0 for n in ratios):
        raise SettingsError('rotor_inertia.gear_ratios', f'expected [0.0] or finite non-zero '
                                                         f'values, got {_listed(ratios)}')
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
    if not all(v <= LIMITS['rotor_inertia'] for v in reflected):
        raise SettingsError('rotor_inertia.gear_ratios', f'reflected inertia J_m N^2 above '
                                                         f'{LIMITS["rotor_inertia"]:g}')
    return joints, reflected


def _rotor_inertia(model, joints, reflected):
    """Rotor inertia reflected at each velocity coordinate of ``model`` (nv,) [kg m^2]."""
    out = np.zeros(model.nv)
    for joint, value in zip(_known_joints(model, 'rotor_inertia.joints', joints), reflected):
        out[model.joint_idx_v[model.joint_index(joint)]] = value
    return out


def _payload(values):
    """The payload parameters checked (whatever the frame), or None without a frame."""
    mass = values['payload.mass']
    com = _finite('payload.com', values['payload.com'], 3, LIMITS['com'])
    i = _finite('payload.inertia', values['payload.inertia'], 6, LIMITS['inertia'])
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


def _known(parameter, names, valid, kind):
    """``names`` when all are in ``valid``, else :class:`SettingsError` listing both."""
    bad = [n for n in names if n not in valid]
    if bad:
        raise SettingsError(parameter, f'unknown {kind} {_listed(bad)}; valid: {_listed(valid)}')
    return names


def _known_frames(model, parameter, frames):
    return _known(parameter, frames, model.frame_names, 'frames')


def _known_joints(model, parameter, joints):
    """``joints``, unless one is not an actuated (one-DOF, independent) joint of ``model``."""
    return _known(parameter, joints, model.actuated_joint_names, 'joints')


def _read_only(a):
    a.flags.writeable = False
    return a
