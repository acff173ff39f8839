"""Momentum observer, external wrench and collision signal, in simulations with known pushes.

The simulations (test/simulation.py) integrate the UR5 of example-robot-data at 1 kHz with the
engine's forward dynamics while a joint controller tracks sums of sines; the observer sees what
sensors report: encoder positions (2^20 counts per turn), drive velocities with noise, efforts
with noise of 0.3 % of the effort limits. The pushes are known, so the estimates are compared
with the truth.
"""
import numpy as np
import pytest
from robots import DEMO_ARM, TREE_URDF, UR5, erd, load
from simulation import DT, UR5_WORKING_POSTURE, exciting_motion, simulate, tool_push_recording

from ros_dynamics.engine import (
    InvalidInputError,
    MomentumObserver,
    Payload,
    RobotModel,
    ShapeError,
    UnknownFrameError,
    collision_thresholds,
    external_wrench,
    joints_in_collision,
)
from ros_dynamics.engine.observers import observe

GAIN = 50.0                  # [1/s]: time constant 20 ms


@pytest.fixture(scope='module')
def ur5():
    return load(erd(UR5))


def test_known_wrench_at_the_tool_is_estimated_within_five_time_constants(ur5):
    wrench, t_push, recording = tool_push_recording(ur5)          # on the robot, world axes
    tau_ext = observe(ur5, GAIN, recording.q_measured, recording.v_measured,
                      recording.tau_measured, recording.t)
    k = int(round((t_push + 5 / GAIN) / DT))
    estimate = external_wrench(ur5, recording.q_measured[k], tau_ext[k], 'tool0')
    force = estimate.wrench[:3]
    assert np.linalg.norm(force - wrench[:3]) < 0.05 * np.linalg.norm(wrench[:3])
    cosine = force @ wrench[:3] / np.linalg.norm(force) / np.linalg.norm(wrench[:3])
    assert np.degrees(np.arccos(min(cosine, 1.0))) < 3.0
    assert np.linalg.norm(estimate.wrench[3:] - wrench[3:]) < 0.1 * np.linalg.norm(wrench[3:])
    assert not estimate.near_singular
    # Before the push the estimate holds only noise; one time constant after it, about 63 %.
    assert np.max(np.abs(tau_ext[100:int(t_push / DT)])) < 1.0
    k1 = int(round((t_push + 1 / GAIN) / DT))
    true_tau = ur5.wrench_torques(recording.q[k1], 'tool0', wrench)
    np.testing.assert_allclose(tau_ext[k1], (1 - np.exp(-1)) * true_tau,
                               atol=0.1 * np.max(np.abs(true_tau)))


def run(model, seed, duration, push=None):
    rng = np.random.default_rng(seed)
    motion = exciting_motion(model, rng, speed=1.0, duration=duration)
    recording = simulate(model, model, motion, duration, rng, push=push)
    return recording, observe(model, GAIN, recording.q_measured, recording.v_measured,
                              recording.tau_measured, recording.t)


def test_a_20_newton_push_is_flagged_within_50_ms_and_free_motion_at_full_speed_is_not(ur5):
    # Thresholds from one free motion at full speed (the node's calibration) ...
    calibration, tau_calibration = run(ur5, 30, 2.0)
    assert np.max(np.abs(calibration.v) / ur5.velocity_limits) > 0.95
    thresholds = collision_thresholds(tau_calibration, margin=2.0)
    # ... another free motion at full speed raises no flag ...
    free, tau_free = run(ur5, 31, 2.0)
    assert np.max(np.abs(free.v) / ur5.velocity_limits) > 0.95
    assert not joints_in_collision(tau_free, thresholds).any()
    # ... and pushes of 20 N, on the wrist or on the forearm, mid-motion, are flagged in 50 ms.
    t_push = 1.0
    for seed, frame, force in [(32, 'wrist_3_link', [0, 20.0, 0]),
                               (33, 'forearm_link', [-20.0, 0, 0]),
                               (34, 'wrist_1_link', [0, 0, -20.0])]:
        wrench = np.r_[force, 0, 0, 0]
        recording, tau_ext = run(ur5, seed, 1.2,
                                 push=lambda t, f=frame, w=wrench: {f: w} if t >= t_push else None)
        flags = joints_in_collision(tau_ext, thresholds).any(axis=-1)
        k_push = int(round(t_push / DT))
        assert not flags[:k_push].any(), frame
        assert flags[k_push:].any(), frame
        latency = np.argmax(flags[k_push:]) * DT
        assert latency <= 0.050, (frame, latency)


def test_observer_follows_a_constant_external_torque_as_a_first_order_filter():
    """Noise-free, holding still: r(t) = tau_ext (1 - exp(-K t)), whatever the step size."""
    model = load(DEMO_ARM)
    q = np.array([0.2, -0.6, 0.9, 0.1, 0.5, -0.3])
    tau_ext = np.array([3.0, -2.0, 1.5, 0.4, -0.2, 0.1])
    hold = model.gravity_torques(q)               # the robot does not move: tau + tau_ext = g
    for dt in (1e-3, 1e-2, 0.02):                 # K dt up to 1: stable and exact
        observer = MomentumObserver(model, gain=[GAIN] * 6)
        for _ in range(int(round(0.04 / dt)) + 1):   # the first update only records
            estimate = observer.update(q, np.zeros(6), hold - tau_ext, dt)
        np.testing.assert_allclose(estimate, tau_ext * (1 - np.exp(-GAIN * 0.04)), rtol=1e-9)
    np.testing.assert_allclose(observer.time_constant, 1 / GAIN)


def test_observer_on_mimic_prismatic_and_continuous_joints_sees_a_wrench_on_a_branch():
    """Noise-free: the small tree (mimic chain, prismatic and continuous joints) held by a PD
    controller while a constant wrench pushes its slider; after ten time constants the
    estimate is J^T F (the wrench moves the joints a little, so J^T F drifts slowly).
    """
    model = RobotModel.from_urdf_string(TREE_URDF)
    q_hold = np.array([0.3, 0.4])
    wrench = np.array([2.0, -1.0, 3.0, 0.1, 0.2, -0.1])
    q, v = q_hold.copy(), np.zeros(2)
    observer = MomentumObserver(model, GAIN)
    for _ in range(int(10 / GAIN / DT) + 1):
        tau = model.gravity_torques(q) + 40.0 * (q_hold - q) - 8.0 * v
        estimate = observer.update(q, v, tau, DT)
        v = v + DT * model.forward_dynamics(q, v, tau, {'slider': wrench})
        q = q + DT * v
    expected = model.wrench_torques(q, 'slider', wrench)
    np.testing.assert_allclose(estimate, expected, atol=0.01 * np.max(np.abs(expected)))


def test_observer_update_from_a_shared_kinematic_pass_and_reset():
    model = load(DEMO_ARM)
    rng = np.random.default_rng(2)
    a, b = MomentumObserver(model, GAIN), MomentumObserver(model, GAIN)
    for _ in range(5):
        q, v, tau = rng.normal(size=(3, 6))
        np.testing.assert_array_equal(a.update(q, v, tau, DT),
                                      b.update_with_state(model.kinematics(q, v), tau, DT))
    assert np.any(a.tau_ext != 0)
    a.reset()
    np.testing.assert_array_equal(a.tau_ext, np.zeros(6))
    np.testing.assert_array_equal(a.update(q, v, tau, DT), np.zeros(6))


def test_observer_estimate_carries_on_across_a_settings_change():
    model = load(DEMO_ARM)
    q = np.full(6, 0.3)
    observer = MomentumObserver(model, GAIN)
    observer.update(q, np.ones(6), np.zeros(6), DT)
    before = observer.update(q, np.ones(6), np.zeros(6), DT)
    model.update_settings(payloads=[Payload('tool0', 10.0, [0, 0, 0.2])])
    # The momentum of a 10 kg heavier tool is not mistaken for a blow.
    np.testing.assert_array_equal(observer.update(q, np.ones(6), np.zeros(6), DT), before)


def test_external_wrench_is_exact_where_the_joints_see_every_component_and_flags_singularity(ur5):
    rng = np.random.default_rng(9)
    q = np.array(UR5_WORKING_POSTURE)
    wrench = rng.normal(size=6) * [10, 10, 10, 1, 1, 1]
    tau_ext = ur5.wrench_torques(q, 'tool0', wrench)
    exact = ur5.external_wrench(q, tau_ext, 'tool0', damping=0.0)      # the entry point
    np.testing.assert_allclose(exact.wrench, wrench, atol=1e-10)
    np.testing.assert_allclose(exact.residual, 0, atol=1e-10)
    damped = external_wrench(ur5, q, tau_ext, 'tool0')
    np.testing.assert_allclose(damped.wrench, wrench, rtol=0, atol=1e-3 * np.max(np.abs(wrench)))
    # At q = 0 the UR5's shoulder, elbow and wrist axes line up: a wrist singularity.
    singular = external_wrench(ur5, np.zeros(6), ur5.wrench_torques(np.zeros(6), 'tool0', wrench),
                               'tool0')
    assert singular.near_singular and singular.singular_values[-1] < 1e-6
    assert np.all(np.isfinite(singular.wrench))
    # A force at the far end of the forearm (the wrist_1 frame), which the first three joints
    # see whole: the force alone is found.
    force = np.r_[5.0, -3.0, 8.0, 0, 0, 0]
    at_wrist = external_wrench(ur5, q, ur5.wrench_torques(q, 'wrist_1_link', force),
                               'wrist_1_link', force_only=True, damping=0.0)
    np.testing.assert_allclose(at_wrist.wrench, force, atol=1e-10)
    assert not at_wrist.near_singular
    # The forearm frame sits on the elbow's axis: forces along that axis's lever are unseen.
    at_elbow = external_wrench(ur5, q, ur5.wrench_torques(q, 'forearm_link', force),
                               'forearm_link', force_only=True)
    assert at_elbow.near_singular
    # Batches: one estimate per joint state.
    Q = np.stack([q, q + 0.1])
    both = external_wrench(ur5, Q, ur5.wrench_torques(Q, 'tool0', wrench), 'tool0', damping=0.0)
    assert both.wrench.shape == (2, 6) and both.near_singular.shape == (2,)
    np.testing.assert_allclose(both.wrench, [wrench, wrench], atol=1e-9)


def test_observer_and_wrench_errors_name_the_argument(ur5):
    q = np.zeros(6)
    with pytest.raises(InvalidInputError, match=r'gain: expected values > 0, got \[0.0'):
        MomentumObserver(ur5, 0.0)
    with pytest.raises(ShapeError, match='gain: expected one value or 6 values'):
        MomentumObserver(ur5, [1.0, 2.0])
    observer = MomentumObserver(ur5, GAIN)
    observer.update(q, q, q, DT)
    with pytest.raises(InvalidInputError, match=r'dt: expected a time step > 0 \[s\], got -0.001'):
        observer.update(q, q, q, -DT)
    with pytest.raises(ShapeError, match='tau_measured: expected 6 values'):
        observer.update(q, q, np.zeros(5), DT)
    with pytest.raises(ShapeError, match='q: expected one joint state'):
        observer.update(np.zeros((2, 6)), np.zeros((2, 6)), q, DT)
    with pytest.raises(InvalidInputError, match="state: expected a kinematic state of this "):
        observer.update_with_state(load(DEMO_ARM).kinematics(q, q), q, DT)
    with pytest.raises(UnknownFrameError, match="unknown frame 'gripper'"):
        external_wrench(ur5, q, q, 'gripper')
    with pytest.raises(InvalidInputError, match='damping: expected a value >= 0'):
        external_wrench(ur5, q, q, 'tool0', damping=-1.0)
    with pytest.raises(InvalidInputError, match='thresholds: expected values > 0'):
        joints_in_collision(q, 0.0)
    with pytest.raises(InvalidInputError, match='margin: expected a factor >= 1'):
        collision_thresholds(np.zeros((3, 6)), margin=0.5)
    with pytest.raises(ShapeError, match=r'tau_ext_free: expected shape \(n_samples, nv\)'):
        collision_thresholds(np.zeros(6))
