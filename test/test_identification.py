"""Payload identification from simulated recordings with known payloads, and the smoothed
derivatives it starts from.

The recordings come from test/simulation.py: the UR5 of example-robot-data carrying a payload,
integrated at 1 kHz with the engine's forward dynamics while a controller that does not know the
payload tracks sums of sines; positions quantised to a 2^20-count encoder, efforts with noise of
0.3 % of the joints' effort limits.
"""
import numpy as np
from pinocchio_reference import random_state
import pytest
from robots import UR5, erd, load
from simulation import box_inertia, payload_recording

from ros_dynamics.engine import (
    InsufficientExcitationError,
    InvalidInputError,
    Payload,
    ShapeError,
    identify_payload,
    identify_payload_from_positions,
    regressors,
)
from ros_dynamics.engine.differentiation import smooth_derivatives


@pytest.fixture(scope='module')
def ur5():
    return load(erd(UR5))


@pytest.mark.parametrize('mass, com, seed', [(0.5, (0.03, -0.02, 0.06), 100),
                                             (3.0, (-0.04, 0.06, 0.12), 102)])
def test_payload_identified_from_ten_seconds_of_simulated_motion(ur5, mass, com, seed):
    truth, recording = payload_recording(mass, com, seed)
    plant = load(erd(UR5))
    plant.update_settings(payloads=[truth])
    estimate = identify_payload_from_positions(ur5, 'tool0', recording.t, recording.q_measured,
                                               recording.tau_measured)
    assert abs(estimate.mass - mass) < 0.02 * mass
    assert np.linalg.norm(estimate.com - com) < 0.005
    assert estimate.mass_com_condition_number < 10 and estimate.samples > 9900
    # Physically consistent, and the fitted payload explains the torques down to the noise.
    J = regressors.pseudo_inertia(estimate.parameters)
    assert np.linalg.eigvalsh(J)[0] >= 0 and estimate.mass > 0
    moments = np.linalg.eigvalsh(estimate.inertia)
    assert moments[0] >= 0 and moments[0] + moments[1] >= moments[2]
    assert np.all(estimate.residual_rms < 0.3 * estimate.payload_torque_rms)
    # Measured torques and the model with the estimate agree as the model with the truth does.
    ur5_fitted = load(erd(UR5))
    ur5_fitted.update_settings(payloads=[estimate.payload()])
    k = slice(100, -100, 50)
    a = np.gradient(recording.v, recording.t, axis=0)[k]
    with_truth = plant.inverse_dynamics(recording.q[k], recording.v[k], a)
    with_estimate = ur5_fitted.inverse_dynamics(recording.q[k], recording.v[k], a)
    assert np.max(np.abs(with_estimate - with_truth)) < 0.02 * np.max(np.abs(with_truth))


def test_efforts_a_sample_late_are_realigned_with_the_positions(ur5):
    """Efforts reported one 1 ms sample after the state they drive (a drive reports the torque
    of the cycle that led to the state, MuJoCo's sim_node the torque of the step that did):
    the delay is estimated, compensated, and the fit is as close as with aligned efforts; with
    aligned efforts the delay found is about zero.
    """
    mass, com = 3.0, (-0.04, 0.06, 0.12)
    _, recording = payload_recording(mass, com, 102)
    t, q, tau = recording.t, recording.q_measured, recording.tau_measured
    aligned = identify_payload_from_positions(ur5, 'tool0', t, q, tau)
    assert abs(aligned.effort_delay) < 1e-4
    late = np.vstack([tau[:1], tau[:-1]])
    ignored = identify_payload_from_positions(ur5, 'tool0', t, q, late, max_effort_delay=0.0)
    found = identify_payload_from_positions(ur5, 'tool0', t, q, late)
    assert ignored.effort_delay == 0.0 and found.effort_delay == pytest.approx(1e-3, abs=2e-4)
    error = {k: np.linalg.norm(e.com - com) for k, e in
             (('aligned', aligned), ('ignored', ignored), ('found', found))}
    assert error['found'] < 1.1 * error['aligned'] < 0.7 * error['ignored']
    assert found.mass == pytest.approx(mass, rel=1e-3)
    for bad in (float('nan'), float('inf'), -1e-3, '5', True, None):
        with pytest.raises(InvalidInputError, match='max_effort_delay'):
            identify_payload_from_positions(ur5, 'tool0', t, q, late, max_effort_delay=bad)


def test_payload_on_a_frame_with_a_payload_already_configured(ur5):
    """The payload configured on the frame is replaced by the estimate, not added to it."""
    rng = np.random.default_rng(4)
    model = load(erd(UR5))
    model.update_settings(payloads=[Payload('tool0', 5.0, [0.1, 0, 0])])
    q, v, a = (np.array([random_state(model, rng)[i] for _ in range(300)]) for i in range(3))
    truth = Payload('tool0', 1.2, [0.0, 0.02, 0.05], box_inertia(1.2, [0.1, 0.1, 0.05]))
    plant = load(erd(UR5))
    plant.update_settings(payloads=[truth])
    estimate = model.identify_payload('tool0', q, v, a, plant.inverse_dynamics(q, v, a))
    assert estimate.mass == pytest.approx(1.2, rel=1e-9)
    np.testing.assert_allclose(estimate.com, truth.com, atol=1e-9)
    np.testing.assert_allclose(estimate.inertia, truth.inertia, atol=1e-9)
    assert not estimate.constrained and estimate.frame == 'tool0'


def test_inconsistent_least_squares_is_projected_onto_physical_bodies(ur5):
    """A point mass with noisy torques: least squares finds an inertia no body has."""
    rng = np.random.default_rng(8)
    q, v, a = (np.array([random_state(ur5, rng)[i] for _ in range(60)]) for i in range(3))
    plant = load(erd(UR5))
    plant.update_settings(payloads=[Payload('tool0', 2.0, [0.02, 0.0, 0.08])])
    for seed in range(20):
        tau = plant.inverse_dynamics(q, v, a) + np.random.default_rng(seed).normal(
            scale=0.05, size=q.shape)
        estimate = identify_payload(ur5, 'tool0', q, v, a, tau)
        if estimate.constrained:
            break
    assert estimate.constrained
    assert np.linalg.eigvalsh(regressors.pseudo_inertia(estimate.unconstrained_parameters))[0] < 0
    assert np.linalg.eigvalsh(regressors.pseudo_inertia(estimate.parameters))[0] >= -1e-12
    assert estimate.mass == pytest.approx(2.0, rel=0.05)
    np.testing.assert_allclose(estimate.com, [0.02, 0.0, 0.08], atol=0.01)


@pytest.mark.parametrize('moving', ['none', 'too little'])
def test_motion_that_does_not_excite_the_payload_is_refused(ur5, moving):
    t = np.arange(0, 5, 1e-3)
    q = np.tile([0.3, -1.2, 1.2, -1.0, 1.2, 0.5], (t.size, 1))
    if moving == 'too little':
        q[:, 5] += 1e-4 * np.sin(2 * t)
    tau = ur5.inverse_dynamics(q, np.zeros_like(q), np.zeros_like(q))
    with pytest.raises(InsufficientExcitationError,
                       match=r"does not excite the payload on 'tool0' enough: the condition "
                             r'number .* above max_condition=100'):
        identify_payload_from_positions(ur5, 'tool0', t, q, tau)


def test_identification_input_errors(ur5):
    q = np.zeros((20, 6))
    with pytest.raises(InvalidInputError, match="frame: 'base_link' is fixed to the base"):
        identify_payload(ur5, 'base_link', q, q, q, q)
    with pytest.raises(ShapeError, match=r'tau: expected 6 values'):
        identify_payload(ur5, 'tool0', q, q, q, np.zeros((20, 5)))
    with pytest.raises(ShapeError, match=r'q: expected joint states of shape \(n, 6\)'):
        identify_payload(ur5, 'tool0', q[0], q[0], q[0], q[0])
    with pytest.raises(InsufficientExcitationError, match='fewer than the 10 payload parameters'):
        identify_payload(ur5, 'tool0', q[:1], q[:1], q[:1], q[:1])
    with pytest.raises(ShapeError, match=r't: expected one time per joint state'):
        identify_payload_from_positions(ur5, 'tool0', np.arange(19.0), q, q)


def test_smooth_derivatives_of_known_signals_with_uneven_sample_times():
    rng = np.random.default_rng(6)
    t = np.sort(rng.uniform(0, 4, 3000))
    t = t[np.diff(t, prepend=-1) > 1e-5]
    x = np.stack([np.sin(2 * t), 0.3 * t ** 3 - t], axis=1)
    dx = np.stack([2 * np.cos(2 * t), 0.9 * t ** 2 - 1], axis=1)
    ddx = np.stack([-4 * np.sin(2 * t), 1.8 * t], axis=1)
    smooth, first, second = smooth_derivatives(t, x, window=41, polyorder=3)
    inner = slice(20, -20)
    np.testing.assert_allclose(smooth[inner], x[inner], atol=1e-6)
    np.testing.assert_allclose(first[inner], dx[inner], atol=1e-4)
    np.testing.assert_allclose(second[inner], ddx[inner], atol=2e-2)
    # A cubic is fitted exactly, ends included.
    np.testing.assert_allclose(second[:, 1], ddx[:, 1], atol=1e-6)
    # Even spacing: the Savitzky-Golay filter of SciPy.
    from scipy.signal import savgol_filter
    t_even = np.arange(500) * 1e-3
    y = np.sin(7 * t_even) + rng.normal(scale=1e-3, size=t_even.size)
    got = smooth_derivatives(t_even, y, window=31, polyorder=4)
    for deriv in range(3):
        np.testing.assert_allclose(got[deriv], savgol_filter(y, 31, 4, deriv=deriv, delta=1e-3,
                                                             mode='interp'), atol=1e-6)


def test_smooth_derivatives_errors():
    t = np.arange(10.0)
    with pytest.raises(InvalidInputError, match=r'expected strictly increasing times, got '
                                                r't\[3\] = 3.0 followed by 3.0'):
        smooth_derivatives(np.r_[0, 1, 2, 3, 3, 5, 6, 7, 8, 9.0], t, window=5)
    with pytest.raises(InvalidInputError, match='window, polyorder: expected an odd window'):
        smooth_derivatives(t, t, window=4)
    with pytest.raises(InvalidInputError, match='window: expected at most the 10 samples'):
        smooth_derivatives(t, t, window=11)
    with pytest.raises(ShapeError, match=r'x: expected shape \(n,\) or \(n, channels\)'):
        smooth_derivatives(t, t[:9], window=5)
