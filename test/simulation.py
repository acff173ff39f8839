"""A robot simulated at 1 kHz with the engine's forward dynamics, and what its sensors report.

The plant integrates ``qdd = forward_dynamics(q, v, tau, f_ext)`` by semi-implicit Euler
(``v += qdd dt``, then ``q += v dt``). A joint controller tracks a reference made of sums of
sines: feedforward torques from the *controller's* model (which does not know the payload or the
push) plus PD feedback. Sensors: positions quantised to an encoder's resolution; velocities as a
drive estimates them, the true ones with white noise of :data:`VELOCITY_NOISE`; efforts the
applied torques plus white noise of a given fraction of the joints' effort limits (the sensors'
full scale). Everything random comes from the ``rng`` passed in.
"""
from dataclasses import dataclass
import functools

import numpy as np
from robots import UR5, erd, load

from ros_dynamics.engine import Payload

#: Encoder resolution [rad]: 2^20 counts per turn, as the absolute encoders of current arms.
ENCODER_RESOLUTION = 2 * np.pi / 2 ** 20
#: Standard deviation [rad/s] of the drives' velocity estimates.
VELOCITY_NOISE = 1e-3
DT = 1e-3


@dataclass
class SumOfSines:
    """``q(t) = center + sum_i amplitude_i sin(omega_i t + phase_i)`` per joint."""

    center: np.ndarray          # (nq,)
    amplitude: np.ndarray       # (n_terms, nq) [rad]
    omega: np.ndarray           # (n_terms, nq) [rad/s]
    phase: np.ndarray           # (n_terms, nq) [rad]

    def __call__(self, t):
        arg = self.omega * t[:, None, None] + self.phase
        q = self.center + np.sum(self.amplitude * np.sin(arg), axis=1)
        v = np.sum(self.amplitude * self.omega * np.cos(arg), axis=1)
        a = -np.sum(self.amplitude * self.omega ** 2 * np.sin(arg), axis=1)
        return q, v, a


def exciting_motion(model, rng, speed=0.6, terms=3, base_frequency=0.2, center=None,
                    reach=1.2, duration=10.0):
    """Sums of sines whose peak speed over ``duration`` [s] is ``speed`` times each joint's
    velocity limit, within the joint limits (clipped to +-pi for unbounded joints) and at most
    ``reach`` [rad] from ``center`` (default: near the middle of the joints' ranges).
    """
    n = model.nq
    lower = np.maximum(model.lower_limits, -np.pi)
    upper = np.minimum(model.upper_limits, np.pi)
    if center is None:
        center = 0.5 * (lower + upper) + rng.uniform(-0.2, 0.2, n)
    center = np.asarray(center, dtype=float)
    room = np.minimum(np.minimum(center - lower, upper - center) * 0.8, reach)
    omega = 2 * np.pi * base_frequency * rng.uniform(0.8, 3.0, size=(terms, n))
    weights = rng.uniform(0.5, 1.0, size=(terms, n))
    amplitude = weights / weights.sum(axis=0) * room
    motion = SumOfSines(center, amplitude, omega, rng.uniform(0, 2 * np.pi, size=(terms, n)))
    # Faster or slower in time, per joint, until the peak speed over the duration is the one
    # asked for (a few rounds: the peak moves as the sines slide against each other), then
    # smaller amplitudes where it is still above.
    target = speed * model.velocity_limits
    t = np.arange(0.0, duration, 1e-3)
    for _ in range(4):
        motion.omega = motion.omega * (target / np.max(np.abs(motion(t)[1]), axis=0))
    motion.amplitude = amplitude * np.minimum(1.0, target / np.max(np.abs(motion(t)[1]), axis=0))
    return motion


@dataclass
class Recording:
    t: np.ndarray                 # (n,) [s]
    q: np.ndarray                 # (n, nq) true positions
    v: np.ndarray                 # (n, nv) true velocities
    tau: np.ndarray               # (n, nv) applied torques
    q_measured: np.ndarray        # encoder positions
    v_measured: np.ndarray        # drive velocity estimates
    tau_measured: np.ndarray      # efforts with sensor noise


def simulate(plant, controller, reference, duration, rng, *, push=None, torque_noise=0.003,
             dt=DT, stiffness=(30.0, 0.9)):
    """Simulate ``plant`` (the true model, payload in its settings) tracking ``reference``.

    ``controller``: the model the controller's feedforward uses. ``push(t) -> dict`` of
    external wrenches (frame -> (6,), world axes at the frame origin) or None. ``stiffness``:
    (natural frequency [rad/s], damping ratio) of the PD loop, scaled by each joint's inertia.
    """
    n_steps = int(round(duration / dt)) + 1
    t = np.arange(n_steps) * dt
    q_ref, v_ref, a_ref = reference(t)
    tau_ff = controller.inverse_dynamics(q_ref, v_ref, a_ref)
    inertia = np.diag(controller.mass_matrix(q_ref[0])) + 0.05
    omega, zeta = stiffness
    kp, kd = omega ** 2 * inertia, 2 * zeta * omega * inertia
    q, v = q_ref[0].copy(), v_ref[0].copy()
    Q, V, TAU = (np.empty((n_steps, plant.nq)) for _ in range(3))
    for k in range(n_steps):
        tau = tau_ff[k] + kp * (q_ref[k] - q) + kd * (v_ref[k] - v)
        Q[k], V[k], TAU[k] = q, v, tau
        f_ext = push(t[k]) if push is not None else None
        v = v + dt * plant.forward_dynamics(q, v, tau, f_ext)
        q = q + dt * v
    q_measured = np.round(Q / ENCODER_RESOLUTION) * ENCODER_RESOLUTION
    v_measured = V + VELOCITY_NOISE * rng.standard_normal(V.shape)
    noise = torque_noise * plant.effort_limits * rng.standard_normal(TAU.shape)
    return Recording(t, Q, V, TAU, q_measured, v_measured, TAU + noise)


#: A posture of the UR5 well away from singularities, where the tool's Jacobian has full rank.
UR5_WORKING_POSTURE = [0.3, -1.2, 1.2, -1.0, 1.2, 0.5]


def tool_push_recording(model, seed=21):
    """``(wrench, t_push, recording)``: the UR5 ``model`` moving slowly around
    :data:`UR5_WORKING_POSTURE` for 0.7 s, a constant wrench (6,) [N, N m] (on the robot, world
    axes) pushing its tool0 from ``t_push`` = 0.5 s.
    """
    rng = np.random.default_rng(seed)
    motion = exciting_motion(model, rng, speed=0.2, center=UR5_WORKING_POSTURE, reach=0.3,
                             duration=1.0)
    wrench = np.array([12.0, -15.0, 20.0, 1.0, -0.5, 0.8])
    t_push = 0.5
    recording = simulate(model, model, motion, 0.7, rng,
                         push=lambda t: {'tool0': wrench} if t >= t_push else None)
    return wrench, t_push, recording


def box_inertia(mass, size):
    """Inertia [kg m^2] about its center of a solid box of ``mass`` [kg] and ``size`` (3,) [m]."""
    a, b, c = np.asarray(size, dtype=float) ** 2
    return mass / 12 * np.diag([b + c, a + c, a + b])


@functools.cache
def payload_recording(mass, com, seed, duration=10.0):
    """``(payload, recording)``: the UR5 of example-robot-data carrying a 8 x 6 x 12 cm box of
    ``mass`` [kg] centred at ``com`` (3-tuple) [m] in tool0, turned at random, along an exciting
    motion at 60 % of the velocity limits tracked by a controller that does not know the
    payload. Cached: the tests that need the same recording share one simulation.
    """
    rng = np.random.default_rng(seed)
    plant = load(erd(UR5))
    R = np.linalg.qr(rng.normal(size=(3, 3)))[0]
    payload = Payload('tool0', mass, np.array(com), R @ box_inertia(mass, [0.08, 0.06, 0.12]) @ R.T)
    plant.update_settings(payloads=[payload])
    motion = exciting_motion(plant, rng, speed=0.6, duration=duration)
    return payload, simulate(plant, load(erd(UR5)), motion, duration, rng)
