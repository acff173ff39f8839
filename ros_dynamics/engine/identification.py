"""Payload identification: mass, center of mass and inertia of a tool from a recorded motion.

A rigid payload fixed to a frame adds joint torques linear in its ten inertial parameters
(:func:`~ros_dynamics.engine.regressors.payload_regressor`): ``tau - tau_model = Y_p pi_p +
noise``, with ``tau`` the measured efforts and ``tau_model`` the model's torques without the
payload (the model's other payloads, rotor inertia and optionally friction included).
:func:`identify_payload` solves that in three steps:

1. least squares with unit-norm columns (so the condition number compares parameters of
   different units fairly) and per-joint weights ``1 / sigma_j`` from a first fit's residuals
   (joints with noisier torques count less);
2. a check that the motion excites the mass and center of mass: the condition number of their
   four columns must stay below ``max_condition``, else
   :class:`~ros_dynamics.engine.exceptions.InsufficientExcitationError`;
3. physical consistency: when the least-squares parameters are not those of a body (negative
   mass, an inertia breaking the triangle inequality -- typical of the weakly excited inertia),
   the closest consistent ones in the same weighted norm, with the pseudo-inertia
   ``J = L L^T`` parametrised by a Cholesky factor with a positive diagonal (Rucker and Wensing,
   "Smooth parameterization of rigid-body inertia", RA-L 2022), fitted with
   ``scipy.optimize.least_squares``.

:func:`identify_payload_from_positions` starts from sample times, positions and efforts (a
recording), estimating velocities and accelerations with
:func:`~ros_dynamics.engine.differentiation.smooth_derivatives` and filtering the efforts the
same way, so both keep the same frequencies. It also estimates how late the efforts are on the
positions (:func:`effort_delay`) and fits the efforts of the same instants: a joint state's
effort is the torque that acted over the cycle before it (a drive reports what it applied or
measured; a simulation, the torque of the step that led to the state), half a cycle to a cycle
behind the acceleration the positions show, and more behind a filtered torque sensor. Left in,
such a delay correlates with the payload's own torques: 1 ms moved a 1.5 kg payload's center of
mass by 0.17 mm on a light 6-axis arm in MuJoCo (0.003 mm on a UR5).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
import math
from typing import TYPE_CHECKING, Any

import numpy as np
from scipy.optimize import least_squares

from . import rnea
from .differentiation import smooth_derivatives
from .exceptions import InsufficientExcitationError, InvalidInputError, ShapeError
from .kinematics import as_configuration, as_finite_array, as_velocity, forward_kinematics
from .regressors import (
    inertia_from_parameters,
    parameters_from_pseudo_inertia,
    payload_regressor_of_state,
    pseudo_inertia,
)
from .settings import Payload

if TYPE_CHECKING:
    from .model import Model

ArrayLike = Any

#: Default bound on the condition number of the mass and center-of-mass columns (unit-norm).
MAX_CONDITION = 100.0
#: Default bound [s] on the delay of the efforts on the positions that
#: :func:`identify_payload_from_positions` estimates (either way; 0: none estimated).
MAX_EFFORT_DELAY = 0.005


@dataclass(frozen=True)
class PayloadEstimate:
    """A payload identified on ``frame``, and how well the data determined it.

    mass [kg] (> 0); com (3,) [m] and inertia (3, 3) [kg m^2] about the center of mass, both in
    the frame's axes (inertia positive semi-definite, triangle inequality holds).
    parameters (10,): the same as inertial parameters about the frame's origin
    (:mod:`~ros_dynamics.engine.regressors` order); unconstrained_parameters (10,): the
    least-squares ones before the consistency constraint, parameter_std (10,) their standard
    errors (large for what the motion barely excited); constrained: whether the constraint was
    active. residual_rms (nv,) [N m or N]: per joint, what the fitted payload leaves
    unexplained; payload_torque_rms (nv,): the payload's share the fit was given (measured minus
    model torques). condition_number: of all ten unit-norm columns; mass_com_condition_number:
    of the first four, the one checked. samples: joint states used. effort_delay [s]: how late
    the efforts were on the positions, as estimated and compensated by
    :func:`identify_payload_from_positions` (0 from :func:`identify_payload`).
    """

    frame: str
    mass: float
    com: np.ndarray
    inertia: np.ndarray
    parameters: np.ndarray
    unconstrained_parameters: np.ndarray
    parameter_std: np.ndarray
    constrained: bool
    residual_rms: np.ndarray
    payload_torque_rms: np.ndarray
    condition_number: float
    mass_com_condition_number: float
    samples: int
    effort_delay: float = 0.0

    def payload(self) -> Payload:
        """The estimate as a :class:`~ros_dynamics.engine.settings.Payload` for the model's
        settings: ``model.update_settings(payloads=[estimate.payload()])``.
        """
        return Payload(self.frame, self.mass, self.com, self.inertia)


def _without_payload_on(model, frame_name):
    """The model's settings with any payload on ``frame_name`` removed."""
    s = model.settings
    kept = [p for p in s.payloads if model.frame_names[model.frame_index(p.frame)] != frame_name]
    if len(kept) == len(s.payloads):
        return s
    return model.make_settings(gravity=s.gravity, rotor_inertia=s.rotor_inertia,
                               damping=s.damping, coulomb=s.coulomb, payloads=kept)


def _condition(A: np.ndarray) -> float:
    s = np.linalg.svd(A, compute_uv=False)
    return float(s[0] / s[-1]) if s[-1] > 0 else float('inf')


def _consistent(R: np.ndarray, z: np.ndarray, scale: np.ndarray, pi0: np.ndarray) -> np.ndarray:
    """Parameters minimising ``|R (scale * pi) - z|`` over physically consistent bodies,
    starting from ``pi0`` (least squares) projected onto them.
    """
    w, V = np.linalg.eigh(pseudo_inertia(pi0))
    floor = 1e-6 * max(float(np.max(np.abs(w))), 1e-12)
    start = np.linalg.cholesky((V * np.maximum(w, floor)) @ V.T)
    lower = np.tril_indices(4)
    diagonal = lower[0] == lower[1]

    def factor(theta):
        L = np.zeros((4, 4))
        # exp keeps the diagonal positive (J positive definite); the clip keeps it finite.
        L[lower] = np.where(diagonal, np.exp(np.clip(theta, -300.0, 300.0)), theta)
        return L

    def residual(theta):
        L = factor(theta)
        return R @ (scale * parameters_from_pseudo_inertia(L @ L.T, check=False)) - z

    theta0 = np.where(diagonal, np.log(np.diag(start)[lower[0]]), start[lower])
    fit = least_squares(residual, theta0, method='lm', xtol=1e-14, ftol=1e-14, gtol=1e-14,
                        max_nfev=2000)
    L = factor(fit.x)
    return parameters_from_pseudo_inertia(L @ L.T)


def identify_payload(model: Model, frame: str | int, q: ArrayLike, v: ArrayLike, a: ArrayLike,
                     tau: ArrayLike, *, friction: bool = False,
                     max_condition: float = MAX_CONDITION) -> PayloadEstimate:
    """Identify the rigid payload fixed to ``frame`` from joint states along a motion.

    ``q`` (n, nq) [rad or m], ``v`` (n, nv), ``a`` (n, nv) and the measured efforts ``tau``
    (n, nv) [N m or N] of n joint states. The payload explains ``tau`` minus the model's
    torques without a payload on ``frame`` (with ``friction=True`` the settings' joint friction
    is part of the model's torques: efforts measured at the motors). See the module docstring
    for the method. Raises :class:`InsufficientExcitationError` when the motion does not
    determine the mass and center of mass (condition number above ``max_condition``; move
    more joints, farther, turning the frame through several orientations against gravity),
    :class:`InvalidInputError` for a frame the joints do not move, :class:`ShapeError` for
    arrays that do not match.
    """
    name, Y, tau_model, tau = _regression(model, frame, q, v, a, tau, friction, max_condition)
    return _fit(name, Y, tau - tau_model)


def _regression(model, frame, q, v, a, tau, friction, max_condition):
    """``(frame name, Y (n, nv, 10), model torques without the payload (n, nv), tau)`` checked
    (shapes; a frame the joints move; the mass and center of mass excited enough).
    """
    f = model.frame_index(frame)
    name = model.frame_names[f]
    if model.frame_body[f] == 0:
        raise InvalidInputError(f'frame: {name!r} is fixed to the base; no joint carries a '
                                'payload on it')
    q = as_configuration(model, q, 'q')
    if q.ndim != 2:
        raise ShapeError(f'q: expected joint states of shape (n, {model.nq}), got {q.shape}')
    v, a, tau = (as_velocity(model, x, label, q.shape[:-1])
                 for x, label in ((v, 'v'), (a, 'a'), (tau, 'tau')))
    n = q.shape[0]
    if n * model.nv < 10:
        raise InsufficientExcitationError(f'q: {n} joint states give {n * model.nv} torques, '
                                          'fewer than the 10 payload parameters')
    state = forward_kinematics(model, q, v, a, settings=_without_payload_on(model, name),
                               check=False)
    tau_model = rnea.inverse_dynamics(model, state, friction=friction)
    Y = payload_regressor_of_state(state, f)                     # (n, nv, 10)
    scale = np.linalg.norm(Y, axis=(0, 1))
    if not np.all(scale > 0):
        raise InsufficientExcitationError(
            f'the motion does not move the payload on {name!r} at all (parameters '
            f'{np.flatnonzero(scale == 0).tolist()} have no effect on any torque)')
    mass_com_condition = _condition((Y / scale)[..., :4].reshape(-1, 4))
    if not mass_com_condition <= max_condition:
        raise InsufficientExcitationError(
            f'the motion does not excite the payload on {name!r} enough: the condition number '
            f'of its mass and center-of-mass columns is {mass_com_condition:.3g}, above '
            f'max_condition={max_condition:g}; move more joints, farther, and turn the frame '
            'through several orientations against gravity')
    return name, Y, tau_model, tau


def _weights(Yn, share):
    """Per-joint weights ``1 / sigma_j`` from an unweighted fit's residuals (noisier joints
    count less).
    """
    first = np.linalg.lstsq(Yn.reshape(-1, 10), share.reshape(-1), rcond=None)[0]
    sigma = np.sqrt(np.mean((share - Yn @ first) ** 2, axis=0))
    return 1.0 / np.maximum(sigma, 1e-6 * max(float(np.max(sigma)), 1e-300))


def _fit(name, Y, measured_share):
    """The :class:`PayloadEstimate` explaining ``measured_share`` (n, nv) with ``Y``."""
    n, nv = measured_share.shape
    scale = np.linalg.norm(Y, axis=(0, 1))
    Yn = Y / scale
    condition = _condition(Yn.reshape(-1, 10))
    mass_com_condition = _condition(Yn[..., :4].reshape(-1, 4))
    # Weighted least squares: weights from a first, unweighted fit's residuals per joint.
    weight = _weights(Yn, measured_share)
    Q, R = np.linalg.qr((Yn * weight[:, None]).reshape(-1, 10))
    z = Q.T @ (measured_share * weight).reshape(-1)
    pi_n = np.linalg.solve(R, z)
    dof = max(n * nv - 10, 1)
    variance = np.sum(((measured_share - Yn @ pi_n) * weight) ** 2) / dof
    R_inv = np.linalg.inv(R)
    std = np.sqrt(variance * np.sum(R_inv ** 2, axis=1)) / scale
    unconstrained = pi_n / scale
    constrained = bool(np.linalg.eigvalsh(pseudo_inertia(unconstrained))[0] <= 0)
    pi = _consistent(R, z, scale, unconstrained) if constrained else unconstrained
    mass, com, inertia = inertia_from_parameters(pi)
    return PayloadEstimate(
        frame=name, mass=float(mass), com=com, inertia=inertia, parameters=pi,
        unconstrained_parameters=unconstrained, parameter_std=std, constrained=constrained,
        residual_rms=np.sqrt(np.mean((measured_share - Y @ pi) ** 2, axis=0)),
        payload_torque_rms=np.sqrt(np.mean(measured_share ** 2, axis=0)),
        condition_number=condition, mass_com_condition_number=mass_com_condition, samples=n)


def effort_delay(Y: np.ndarray, share: np.ndarray, rate: np.ndarray, curvature: np.ndarray,
                 max_delay: float) -> float:
    """How late [s] the efforts are on the positions, within ``[-max_delay, max_delay]``: the
    delay ``d`` whose efforts ``tau(t + d) ~ tau + d tau' + d^2 / 2 tau''`` the payload
    explains best (least weighted residual of the fit, the weights of a fit without delay).

    ``Y`` (n, nv, 10) the payload regressor; ``share`` (n, nv) the smoothed efforts minus the
    model's torques, ``rate`` and ``curvature`` (n, nv) the efforts' first and second time
    derivatives, all at the same instants as the positions.
    """
    scale = np.linalg.norm(Y, axis=(0, 1))
    Yn = Y / scale
    weight = _weights(Yn, share)
    Q, _ = np.linalg.qr((Yn * weight[:, None]).reshape(-1, 10))
    # Residuals of the three terms after the fit (the fit is linear in the efforts), so that
    # the residual at d is r0 + d r1 + d^2 / 2 r2: its squared norm a quartic in d.
    r = []
    for x in (share, rate, curvature):
        b = (x * weight).reshape(-1)
        r.append(b - Q @ (Q.T @ b))
    gram = np.array([[ri @ rj for rj in r] for ri in r])
    d = np.linspace(-max_delay, max_delay, 4001)
    u = np.stack([np.ones_like(d), d, d ** 2 / 2])
    cost = np.einsum('ik,ij,jk->k', u, gram, u)
    return float(d[int(np.argmin(cost))])


def identify_payload_from_positions(model: Model, frame: str | int, t: ArrayLike, q: ArrayLike,
                                    tau: ArrayLike, *, window: int = 51, polyorder: int = 3,
                                    friction: bool = False,
                                    max_condition: float = MAX_CONDITION,
                                    max_effort_delay: float = MAX_EFFORT_DELAY
                                    ) -> PayloadEstimate:
    """:func:`identify_payload` from a recording: sample times ``t`` (n,) [s] (increasing,
    possibly uneven), positions ``q`` (n, nq) and measured efforts ``tau`` (n, nv).

    Velocities and accelerations come from :func:`smooth_derivatives` of ``q`` (``window``
    samples, degree ``polyorder``); the efforts go through the same filter, so both hold the
    same frequencies, and ``window // 2`` samples are dropped at each end where the fits are
    one-sided. Unbounded (continuous) joints' positions are unwrapped first. The efforts' delay
    on the positions is estimated within ``[-max_effort_delay, max_effort_delay]`` [s]
    (:func:`effort_delay`; 0: none) and the efforts of the positions' instants fitted
    (``tau(t + d)`` from the smoothing's derivatives): :attr:`PayloadEstimate.effort_delay`.
    """
    q = as_configuration(model, q, 'q')
    t = as_finite_array(t, 't')
    if q.ndim != 2 or t.shape != q.shape[:1]:
        raise ShapeError(f't: expected one time per joint state of q {q.shape}, got {t.shape}')
    tau = as_velocity(model, tau, 'tau', q.shape[:-1])
    unbounded = model.angular_joints & ~np.isfinite(model.upper_limits)
    q = np.where(unbounded, np.unwrap(q, axis=0), q)
    if isinstance(max_effort_delay, bool) or not isinstance(
            max_effort_delay, (int, float, np.integer, np.floating)) or not (
            math.isfinite(max_effort_delay) and max_effort_delay >= 0):
        raise InvalidInputError(f'max_effort_delay: expected a finite number >= 0 [s], got '
                                f'{max_effort_delay!r}')
    q_s, v, a = smooth_derivatives(t, q, window, polyorder)
    tau_s, rate, curvature = smooth_derivatives(t, tau, window, polyorder)
    keep = slice(window // 2, t.size - window // 2)
    name, Y, tau_model, tau_s = _regression(model, frame, q_s[keep], v[keep], a[keep],
                                            tau_s[keep], friction, max_condition)
    share = tau_s - tau_model
    delay = 0.0
    # Within the smoothing's half window, where its polynomials hold.
    max_effort_delay = min(max_effort_delay, 0.5 * float(np.median(t[window - 1:] -
                                                                   t[:t.size - window + 1])))
    if max_effort_delay > 0:
        rate, curvature = rate[keep], curvature[keep]
        delay = effort_delay(Y, share, rate, curvature, max_effort_delay)
        share = share + delay * rate + 0.5 * delay ** 2 * curvature
    return dataclasses.replace(_fit(name, Y, share), effort_delay=delay)
