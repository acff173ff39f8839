"""The node's settings without a running node: every parameter declared once with its range,
one validation (the same with or without a model) naming the parameter at fault, one immutable
value, dynamics applied in one place; and a bad start-up value refused by the node process.
"""
from dataclasses import FrozenInstanceError
import math

import numpy as np
import pytest
from robots import DEMO_ARM
from ros_helpers import NodeProcess

from ros_dynamics.engine import ModelError, Payload, RobotModel
from ros_dynamics.ros.settings import PARAMETERS, SPECS, SettingsError, validate

MODEL = RobotModel.from_urdf_file(DEMO_ARM)


def values(**changes):
    """Every parameter at its default, ``changes`` applied (``__`` stands for ``.``)."""
    out = {spec.name: spec.default for spec in PARAMETERS}
    out.update({name.replace('__', '.'): value for name, value in changes.items()})
    return out


def test_every_parameter_is_declared_once_with_its_range():
    names = [spec.name for spec in PARAMETERS]
    assert len(names) == len(set(names))
    for spec in PARAMETERS:
        d = spec.descriptor()
        assert d.description and d.read_only == spec.read_only
        if spec.range is None:
            assert not d.floating_point_range and not d.integer_range
            continue
        low, high = spec.range
        assert low <= spec.default <= high
        r = d.floating_point_range if isinstance(spec.default, float) else d.integer_range
        assert (r[0].from_value, r[0].to_value) == (low, high), spec.name
    assert SPECS['ik.seed_samples'].descriptor().integer_range[0].to_value == 1_000_000
    assert SPECS['publish_rate'].read_only and SPECS['ik.seed_samples'].read_only
    assert '[m/s^2]' in SPECS['gravity'].descriptor().description


def test_defaults_give_the_leaf_tips_the_root_base_and_the_model_order():
    s = validate(values(), MODEL)
    assert s.tips == ('tool0',) and s.base_frame == 'base_link' and s.base_fixed
    assert s.command_joints == MODEL.joint_names
    np.testing.assert_array_equal(s.command_index, np.arange(MODEL.nq))
    assert s.ik.tip_frame == 'tool0' and s.ik.seed_samples == 20000
    assert s.dynamics.payloads == () and s.markers_rate == 10.0 and not s.friction
    np.testing.assert_array_equal(s.dynamics.gravity, [0.0, 0.0, -9.81])
    assert validate(values()) is None


def test_settings_are_one_immutable_value():
    s = validate(values(command_joints=['elbow_joint']), MODEL)
    with pytest.raises(FrozenInstanceError):
        s.tips = ('forearm_link',)
    with pytest.raises(FrozenInstanceError):
        s.outputs.gravity = False
    for array in (s.command_index, s.dynamics.gravity, s.dynamics.rotor_inertia):
        with pytest.raises(ValueError, match='read-only'):
            array[0] = 1


@pytest.mark.parametrize('change, match', [
    (dict(markers_rate=-1.0), r'parameter markers_rate: expected a value in \[0.1, 1000\] Hz'),
    (dict(markers_rate=0.0), 'parameter markers_rate'),
    (dict(publish_rate=math.nan), 'parameter publish_rate'),
    (dict(payload__mass=-1.0), r'parameter payload.mass: .* got -1.0'),
    (dict(payload__mass=math.nan), 'parameter payload.mass'),
    (dict(payload__mass=math.inf, payload__frame='tool0'), 'parameter payload.mass'),
    (dict(payload__com=[0.0, math.nan, 0.0]), 'parameter payload.com: expected 3 finite'),
    (dict(payload__com=[0.0, 0.0]), 'parameter payload.com: expected 3 finite'),
    (dict(payload__inertia=[1.0, 0.0, 0.0, -1.0, 0.0, 1.0]),
     'parameter payload.inertia: not positive semi-definite'),
    (dict(payload__inertia=[1.0, 2.0, 0.0, 1.0, 0.0, 1.0]), 'parameter payload.inertia'),
    (dict(gravity=[0.0, 0.0, 1e308]), r'parameter gravity: expected a magnitude <= 1000'),
    (dict(gravity=[0.0, 0.0, math.nan]), 'parameter gravity: expected 3 finite values'),
    (dict(gravity=[0.0, -9.81]), 'parameter gravity: expected 3 finite values'),
    (dict(ik__timeout=0.0), 'parameter ik.timeout'),
    (dict(ik__position_tolerance=math.inf), 'parameter ik.position_tolerance'),
    (dict(ik__orientation_tolerance=-1e-5), 'parameter ik.orientation_tolerance'),
    (dict(ik__seed_samples=2_000_000), r'parameter ik.seed_samples: .*1,000,000'),
    (dict(ik__seed_samples=-1), 'parameter ik.seed_samples'),
    (dict(rotor_inertia__values=[-0.1]), r'parameter rotor_inertia.values: expected values in'),
    (dict(rotor_inertia__values=[math.inf]), r'parameter rotor_inertia.values: expected values'),
    (dict(payload__com=[0.0, 0.0, 1e308]), 'parameter payload.com: .* magnitude <= 1000'),
    (dict(payload__inertia=[1e308, 0.0, 0.0, 1.0, 0.0, 1.0]), 'parameter payload.inertia'),
    (dict(payload__mass=1e308), 'parameter payload.mass'),
    (dict(ik__timeout=2.0), 'parameter ik.timeout: expected at most ik.max_timeout'),
    (dict(ik__max_timeout=1e9), 'parameter ik.max_timeout'),
    (dict(markers_rate=-1.0), 'parameter markers_rate'),
    (dict(initial_positions__joints=['elbow_joint', 'wrist_1_joint']),
     'parameter initial_positions.values: '
     'expected one value per joint'),
    (dict(initial_positions__joints=['elbow_joint'], initial_positions__values=[math.nan]),
     'parameter initial_positions.values: expected 1 finite'),
    (dict(trajectory__max_points=0), 'parameter trajectory.max_points'),
    (dict(description__max_bytes=0), 'parameter description.max_bytes'),
    (dict(rotor_inertia__joints=['elbow_joint', 'wrist_1_joint'],
          rotor_inertia__values=[0.1]), 'parameter rotor_inertia.values: expected one entry'),
    (dict(rotor_inertia__joints=['elbow_joint'], rotor_inertia__values=[0.1],
          rotor_inertia__gear_ratios=[math.nan]), 'parameter rotor_inertia.gear_ratios'),
    (dict(rotor_inertia__joints=['elbow_joint'], rotor_inertia__values=[1e5],
          rotor_inertia__gear_ratios=[1e200]), 'parameter rotor_inertia.gear_ratios: reflected'),
    (dict(frame_prefix='x' * 10_000_000), 'parameter frame_prefix: expected a frame id of 1 to'),
    (dict(frame_prefix='left /'), 'parameter frame_prefix: expected a frame id'),
    (dict(frame_prefix='left\n'), 'parameter frame_prefix: expected a frame id'),
    (dict(world_frame='w' * 257), 'parameter world_frame: expected a frame id'),
    (dict(world_frame='', root_joint='floating'), 'parameter world_frame: expected a frame id'),
])
def test_bad_values_are_refused_the_same_with_and_without_a_model(change, match):
    for model in (None, MODEL):
        with pytest.raises(SettingsError, match=match) as err:
            validate(values(**change), model)
        assert err.value.parameter in SPECS
        assert len(str(err.value)) <= 1000


def test_frame_ids_of_any_printable_characters_up_to_256_are_kept():
    for prefix in ('', 'left/', 'robot_1/arm:', 'p' * 256):
        assert validate(values(frame_prefix=prefix), MODEL).frame_prefix == prefix


@pytest.mark.parametrize('change, parameter', [
    (dict(tip_frames=['tool0', 'nope']), 'tip_frames'),
    (dict(base_frame='nowhere'), 'base_frame'),
    (dict(command_joints=['elbow_joint', 'ghost']), 'command_joints'),
    (dict(ik__tip_frame='nope'), 'ik.tip_frame'),
    (dict(payload__frame='nowhere', payload__mass=1.0), 'payload.frame'),
    (dict(payload__frame='nowhere', payload__mass=0.0), 'payload.frame'),   # no mass yet
    (dict(rotor_inertia__joints=['ghost'], rotor_inertia__values=[0.1]),
     'rotor_inertia.joints'),
])
def test_names_the_model_lacks_are_refused_with_the_valid_ones(change, parameter):
    assert validate(values(**change)) is None            # nothing to check them against yet
    with pytest.raises(SettingsError, match=f'parameter {parameter}: unknown') as err:
        validate(values(**change), MODEL)
    assert err.value.parameter == parameter
    assert "'tool0'" in str(err.value) or "'elbow_joint'" in str(err.value)


@pytest.mark.parametrize('change', [dict(tip_frames=['t' * 10_000_000]),
                                    dict(base_frame='b' * 10_000_000),
                                    dict(command_joints=['j'] * 100_000)])
def test_refusals_of_huge_values_are_about_a_line(change):
    with pytest.raises(SettingsError) as err:
        validate(values(**change), MODEL)
    assert len(str(err.value)) <= 1000


def test_frames_joints_and_dynamics_are_resolved():
    s = validate(values(base_frame='shoulder_link', tip_frames=['tool0', 'forearm_link'],
                        command_joints=['elbow_joint', 'shoulder_pan_joint'],
                        payload__frame='tool0', payload__mass=2.0,
                        payload__com=[0.0, 0.0, 0.1],
                        payload__inertia=[0.01, 0.0, 0.0, 0.02, 0.0, 0.03],
                        rotor_inertia__joints=['elbow_joint'], rotor_inertia__values=[0.5],
                        rotor_inertia__gear_ratios=[10.0], publish__markers=False), MODEL)
    assert s.tips == ('tool0', 'forearm_link') and s.ik.tip_frame == 'tool0'
    assert not s.base_fixed and not s.outputs.markers and s.outputs.gravity
    assert list(s.command_index) == [MODEL.joint_index('elbow_joint'), 0]
    expected = np.zeros(MODEL.nq)
    expected[MODEL.joint_index('elbow_joint')] = 50.0
    np.testing.assert_array_equal(s.dynamics.rotor_inertia, expected)
    (p,) = s.dynamics.payloads
    assert p.frame == 'tool0' and p.mass == 2.0
    np.testing.assert_array_equal(p.inertia, np.diag([0.01, 0.02, 0.03]))
    # A payload of mass 0 is no payload, whatever its frame.
    assert validate(values(payload__frame='tool0'), MODEL).dynamics.payloads == ()


def test_the_dynamic_settings_equal_the_engine_settings_they_stand_for():
    applied = RobotModel.from_urdf_file(DEMO_ARM)
    s = validate(values(gravity=[0.0, 0.0, -1.62], payload__frame='tool0', payload__mass=2.5,
                        payload__com=[0.0, 0.0, 0.05],
                        payload__inertia=[0.01, 0.0, 0.0, 0.012, 0.0, 0.008],
                        rotor_inertia__joints=['elbow_joint'], rotor_inertia__values=[0.2]),
                 applied)
    with pytest.raises(ModelError, match='made for this model'):
        MODEL.settings = s.dynamics                       # settings are made for one model
    applied.settings = s.dynamics
    reference = RobotModel.from_urdf_file(DEMO_ARM)
    reference.settings = reference.make_settings(
        gravity=[0.0, 0.0, -1.62], rotor_inertia={'elbow_joint': 0.2},
        payloads=[Payload('tool0', 2.5, [0.0, 0.0, 0.05], np.diag([0.01, 0.012, 0.008]))])
    q = np.random.default_rng(3).uniform(-1.5, 1.5, (5, MODEL.nq))
    qdd = np.ones_like(q)
    np.testing.assert_allclose(applied.inverse_dynamics(q, 0 * q, qdd),
                               reference.inverse_dynamics(q, 0 * q, qdd), atol=1e-12)
    applied.settings = validate(values(), applied).dynamics
    np.testing.assert_allclose(applied.gravity_torques(q),
                               RobotModel.from_urdf_file(DEMO_ARM).gravity_torques(q), atol=1e-12)


@pytest.mark.parametrize('argument, message', [
    ('markers_rate:=-1.0', 'parameter markers_rate: expected a value in [0.1, 1000] Hz'),
    ('payload.mass:=-2.0', 'parameter payload.mass: expected a value in [0, 10000] kg'),
    ('gravity:=[0.0, 0.0, 1.0e308]', 'parameter gravity: expected a magnitude'),
    ('tip_frames:=[nope]', "parameter tip_frames: unknown frames ['nope']"),
])
def test_the_node_refuses_to_start_on_a_bad_value_naming_it(tmp_path, argument, message):
    node = NodeProcess('dynamics_node', '-p', f'urdf_file:={DEMO_ARM}', '-p', argument,
                       log_path=str(tmp_path / 'n.log'))
    node.proc.wait(30)
    assert node.proc.returncode != 0, node.output()
    assert message in node.output()
    assert 'is invalid' not in node.output()


def test_defaults_of_joints_never_heard_of_and_the_joints_each_tip_depends_on():
    s = validate(values(tip_frames=['tool0', 'upper_arm_link'],
                        initial_positions__joints=['elbow_joint'],
                        initial_positions__values=[0.5]), MODEL)
    expected = np.clip(np.zeros(MODEL.nq), MODEL.lower_limits, MODEL.upper_limits)
    expected[MODEL.joint_index('elbow_joint')] = 0.5
    np.testing.assert_array_equal(s.initial_q, expected)
    assert s.tip_joints[0].all()                     # every joint moves tool0
    upper = [MODEL.joint_names[i] for i in np.flatnonzero(s.tip_joints[1])]
    assert upper == ['shoulder_pan_joint', 'shoulder_lift_joint']
    with pytest.raises(SettingsError, match='initial_positions.values: elbow_joint: 100 is '
                                            'outside its limits'):
        validate(values(initial_positions__joints=['elbow_joint'],
                        initial_positions__values=[100.0]), MODEL)
    with pytest.raises(SettingsError, match=r'tip_frames: 2 tip frames, more than '
                                            r'max_tip_frames \(1\)'):
        validate(values(tip_frames=['tool0', 'upper_arm_link'], max_tip_frames=1), MODEL)


def test_effort_settings_thresholds_per_actuated_joint_and_identify_frame():
    m = RobotModel.from_urdf_file(DEMO_ARM)
    s = validate(values(**{'collision.threshold': 7.0, 'observer.gain': 80.0,
                           'collision.thresholds.joints': ['elbow_joint'],
                           'collision.thresholds.values': [3.5]}), m)
    expected = np.full(len(m.actuated_joint_names), 7.0)
    expected[m.actuated_joint_names.index('elbow_joint')] = 3.5
    np.testing.assert_array_equal(s.effort.thresholds, expected)
    assert s.effort.gain == 80.0 and not s.effort.thresholds.flags.writeable
    for change, match in (
            ({'collision.thresholds.joints': ['nope'], 'collision.thresholds.values': [1.0]},
             'collision.thresholds.joints: unknown joints'),
            ({'collision.thresholds.joints': ['elbow_joint'],
              'collision.thresholds.values': [0.0]}, 'collision.thresholds.values: elbow_joint'),
            ({'collision.thresholds.joints': ['elbow_joint'],
              'collision.thresholds.values': [math.nan]}, 'collision.thresholds.values'),
            ({'collision.thresholds.joints': ['elbow_joint'],
              'collision.thresholds.values': [1.0, 2.0]}, 'one value per joint'),
            ({'observer.gain': 0.0}, 'observer.gain'),
            ({'efforts.max_stamp_gap': math.inf}, 'efforts.max_stamp_gap'),
            ({'identify.max_duration': -1.0}, 'identify.max_duration'),
            ({'identify.frame': 'nowhere'}, 'identify.frame: unknown frames'),
            ({'identify.frame': m.root_link}, 'fixed to the base')):
        with pytest.raises(SettingsError, match=match):
            validate(values(**change), m)
