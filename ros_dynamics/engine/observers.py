"""External joint torques from measured efforts, the wrench that explains them, collisions.

The generalized-momentum observer (Haddadin, De Luca and Albu-Schaeffer, "Robot Collisions: A
Survey on Detection, Isolation, and Identification", IEEE Transactions on Robotics 33(6), 2017,
section IV-C; De Luca and Mattone, ICRA 2003) estimates the torques ``tau_ext`` (nv,) that
something outside the robot exerts at its joints, from positions, velocities and the measured
joint efforts alone -- no acceleration. With ``p = M(q) v`` the generalized momentum, the
dynamics ``M v' + C v + g = tau + tau_ext`` and ``M' = C + C^T`` give

    ``p' = tau + tau_ext + C(q, v)^T v - g(q)``

and the residual ``r = K (p - p(0) - integral (tau + C^T v - g + r) dt)`` obeys
``r' = K (tau_ext - r)``: each ``r_i`` follows ``tau_ext,i`` through a first-order low-pass
filter of time constant ``1 / K_i``. :class:`MomentumObserver` discretises that filter exactly
for an input held over each step, so it is stable at any step and any gain:
``r_k = e^(-K dt) r_(k-1) + (1 - e^(-K dt)) ((p_k - p_(k-1)) / dt - beta)``, with ``beta`` the
mean of ``tau + C^T v - g`` at both ends of the step.

:func:`external_wrench` finds the wrench at a frame whose ``J^T F`` explains ``tau_ext`` best;
:func:`collision_thresholds` and :func:`joints_in_collision` turn ``tau_ext`` into a collision
signal (see their docstrings for the recipe). Joint-space vectors are ``(nv,)`` (velocities,
torques) and ``(nq,)`` (positions); wrenches ``[force; torque]`` [N, N m].
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Optional

import numpy as np

from . import crba, rnea
from .checks import as_finite_array
from .exceptions import InvalidInputError, ShapeError
from .jacobians import frame_jacobian
from .kinematics import KinematicState, as_configuration, as_velocity, forward_kinematics

if TYPE_CHECKING:
    from .model import Model

ArrayLike = Any


def _positive(values, name: str, shape: tuple) -> np.ndarray:
    """``values`` broadcast to ``shape``, finite and > 0, else a typed error naming ``name``."""
    arr = as_finite_array(values, name)
    try:
        arr = np.broadcast_to(arr, shape).astype(float)
    except ValueError:
        raise ShapeError(f'{name}: expected one value or {shape[-1]} values, got shape '
                         f'{arr.shape}') from None
    if not np.all(arr > 0):
        raise InvalidInputError(f'{name}: expected values > 0, got {arr.tolist()}')
    return arr


class MomentumObserver:
    """First-order generalized-momentum observer of external joint torques of one robot.

    ``gain`` K [1/s]: one value or one per joint (nv,); ``1 / K`` is the time constant with
    which the estimate follows a step of external torque (63 % after ``1/K``, 99 % after
    ``5/K``). Higher gains react faster and pass more measurement noise. ``friction=True``
    subtracts the model settings' joint friction from the measured efforts (efforts measured
    at the motor); leave it False for joint-side torque sensors.

    The model is only read: its current dynamic settings (payloads, rotor inertia, gravity) are
    those of each update's kinematic pass, and when they change between two updates the
    estimate carries on from there (the momentum of the new settings is not compared with the
    old). The observer's own state -- the last momentum and estimate -- lives in this object;
    use one observer per robot and per thread. Reference: Haddadin, De Luca and Albu-Schaeffer,
    "Robot Collisions: A Survey on Detection, Isolation, and Identification", IEEE T-RO 33(6),
    2017 (see the module docstring for the equations).
    """

    def __init__(self, model, gain: ArrayLike, *, friction: bool = False):
        self.model = model
        self.gain = _positive(gain, 'gain', (model.nv,))
        self.gain.setflags(write=False)
        self.friction = bool(friction)
        self.reset()

    def reset(self) -> None:
        """Forget the motion so far: the next update starts from ``tau_ext = 0``."""
        self._momentum = None
        self._beta = None
        self._settings = None
        self._tau_ext = np.zeros(self.model.nv)

    @property
    def tau_ext(self) -> np.ndarray:
        """The latest estimate (nv,) [N m or N] (zeros before the second update)."""
        return self._tau_ext.copy()

    @property
    def time_constant(self) -> np.ndarray:
        """``1 / gain`` (nv,) [s]."""
        return 1.0 / self.gain

    def update(self, q: ArrayLike, v: ArrayLike, tau_measured: ArrayLike, dt: float) -> np.ndarray:
        """One step: positions ``q`` (nq,) [rad or m], velocities ``v`` (nv,), measured efforts
        ``tau_measured`` (nv,) [N m or N] and the time ``dt`` [s] since the previous update.
        Returns ``tau_ext`` (nv,) [N m or N], the external torques' estimate (positive when the
        environment pushes the joint forward). The first update after :meth:`reset` only
        records the state and returns zeros.
        """
        state = forward_kinematics(self.model, q, v)
        return self.update_with_state(state, tau_measured, dt)

    def update_with_state(self, state: KinematicState, tau_measured: ArrayLike,
                          dt: float) -> np.ndarray:
        """:meth:`update` from a kinematic pass the caller already holds (computed with q and
        v for this joint state): a node computes one pass per joint state for all its outputs.
        """
        if state.model is not self.model or state.V_world_body is None:
            raise InvalidInputError('state: expected a kinematic state of this observer\'s model '
                                    'computed with q and v')
        if state.batch_shape:
            raise ShapeError(f'q: expected one joint state of shape ({self.model.nq},), got '
                             f'batch shape {state.batch_shape}')
        tau = as_velocity(self.model, tau_measured, 'tau_measured', ())
        dt = float(as_finite_array(dt, 'dt'))
        if self._momentum is not None and not dt > 0:
            raise InvalidInputError(f'dt: expected a time step > 0 [s], got {dt!r}')
        v = state.qd
        M = crba.mass_matrix(self.model, state)
        C = crba.coriolis_matrix(self.model, state)
        beta = tau + C.T @ v - rnea.gravity_torques(self.model, state)
        if self.friction:
            beta = beta - rnea.friction_torques(state.settings, v)
        momentum = M @ v
        if self._momentum is not None and state.settings is self._settings:
            decay = np.exp(-self.gain * dt)
            drive = (momentum - self._momentum) / dt - 0.5 * (beta + self._beta)
            self._tau_ext = decay * self._tau_ext + (1.0 - decay) * drive
        self._momentum, self._beta, self._settings = momentum, beta, state.settings
        return self._tau_ext.copy()


@dataclass(frozen=True)
class WrenchEstimate:
    """The wrench at a frame that explains external joint torques best.

    wrench (..., 6) [N, N m]: ``[force; torque]`` exerted *on* the robot at the frame's
    origin, in world axes (torque zero when only a force was asked for). residual (..., nv)
    [N m or N]: ``tau_ext - J^T wrench``, what no wrench at this frame explains (contacts
    elsewhere, model errors, noise). singular_values (..., k): of the frame's Jacobian rows used
    (``k = min(rows, nv)``), largest first. near_singular (...,): True when the smallest is
    below ``singular_ratio`` times the largest or the joints cannot produce every wrench
    component (fewer joints than rows): some wrench directions are then not observable and the
    estimate in those directions is damped towards zero.
    """

    wrench: np.ndarray
    residual: np.ndarray
    singular_values: np.ndarray
    near_singular: np.ndarray


def external_wrench_of_state(state: KinematicState, tau_ext: ArrayLike, frame: str | int, *,
                             force_only: bool = False, damping: float = 0.001,
                             singular_ratio: float = 0.01,
                             J_world_frame: np.ndarray | None = None) -> WrenchEstimate:
    """:func:`external_wrench` from a kinematic pass (computed with q) the caller holds;
    ``J_world_frame``: the frame's ``'local_world_aligned'`` Jacobian of that pass (..., 6, nv)
    when the caller already has it.
    """
    model = state.model
    tau_ext = as_velocity(model, tau_ext, 'tau_ext', state.batch_shape)
    damping = float(as_finite_array(damping, 'damping'))
    if damping < 0:
        raise InvalidInputError(f'damping: expected a value >= 0, got {damping}')
    J = frame_jacobian(state, frame, 'local_world_aligned') if J_world_frame is None \
        else J_world_frame
    rows = 3 if force_only else 6
    U, s, Vh = np.linalg.svd(J[..., :rows, :], full_matrices=False)
    # J^T F = tau: F = U diag(s / (s^2 + damping^2)) Vh tau (least squares, damped); directions
    # no joint moves (s at rounding level) get nothing, as in a pseudo-inverse.
    seen = s > 1e-12 * s[..., :1]
    gain = np.where(seen, s / np.where(seen, s * s + damping * damping, 1.0), 0.0)
    coefficients = gain * (Vh @ tau_ext[..., None])[..., 0]
    solved = (U @ coefficients[..., None])[..., 0]
    wrench = np.zeros(state.batch_shape + (6,))
    wrench[..., :rows] = solved
    residual = tau_ext - (np.swapaxes(J, -1, -2) @ wrench[..., None])[..., 0]
    near = (s[..., -1] < singular_ratio * s[..., 0]) | (s.shape[-1] < rows)
    return WrenchEstimate(wrench=wrench, residual=residual, singular_values=s,
                          near_singular=np.asarray(near))


def external_wrench(model: Model, q: ArrayLike, tau_ext: ArrayLike, frame: str | int, *,
                    force_only: bool = False, damping: float = 0.001,
                    singular_ratio: float = 0.01) -> WrenchEstimate:
    """The wrench at ``frame`` (name or index) that explains external torques best.

    ``q`` (..., nq) [rad or m], ``tau_ext`` (..., nv) [N m or N] (e.g.
    :attr:`MomentumObserver.tau_ext`). Solves ``J^T F = tau_ext`` for ``F = [force; torque]``
    at the frame's origin in world axes (``J`` the frame's ``local_world_aligned`` Jacobian) by
    damped least squares, ``F = argmin |J^T F - tau_ext|^2 + damping^2 |F|^2``: exact where the
    joints see every wrench component, damped towards zero in the directions they barely see.
    ``damping`` is in the units of the Jacobian's singular values ([m] for force rows of
    revolute joints). ``force_only=True`` looks for a force through the frame's origin alone
    (a contact point), which three joints suffice to observe. Returns a
    :class:`WrenchEstimate` with the residual and a near-singularity flag.
    """
    return external_wrench_of_state(forward_kinematics(model, q), tau_ext, frame,
                                    force_only=force_only, damping=damping,
                                    singular_ratio=singular_ratio)


def collision_thresholds(tau_ext_free: ArrayLike, margin: float = 2.0,
                         minimum: ArrayLike = 0.0) -> np.ndarray:
    """Per-joint thresholds (nv,) [N m or N] from a recording of free motion.

    ``tau_ext_free`` (n_samples, nv): observer estimates while the robot moves freely (the
    fastest motions it will make, payload as configured): what model errors and noise alone
    produce. The thresholds are ``margin`` times their largest magnitude per joint, at least
    ``minimum`` (one value or (nv,)). Recipe for a collision signal::

        observer = MomentumObserver(model, gain=50.0)
        thresholds = collision_thresholds(estimates_of_free_motion, margin=2.0)
        ... per joint state:
        tau_ext = observer.update(q, v, effort, dt)
        if joints_in_collision(tau_ext, thresholds).any(): stop or comply
    """
    free = as_finite_array(tau_ext_free, 'tau_ext_free')
    if free.ndim != 2 or free.shape[0] == 0:
        raise ShapeError(f'tau_ext_free: expected shape (n_samples, nv) with samples, got '
                         f'{free.shape}')
    margin = float(as_finite_array(margin, 'margin'))
    if margin < 1:
        raise InvalidInputError(f'margin: expected a factor >= 1, got {margin}')
    return np.maximum(margin * np.max(np.abs(free), axis=0), as_finite_array(minimum, 'minimum'))


def joints_in_collision(tau_ext: ArrayLike, thresholds: ArrayLike) -> np.ndarray:
    """Boolean mask (..., nv): joints whose external torque magnitude exceeds its threshold.

    ``tau_ext`` (..., nv) [N m or N]; ``thresholds`` one value or (nv,) [N m or N], > 0.
    """
    tau_ext = as_finite_array(tau_ext, 'tau_ext')
    if tau_ext.ndim == 0:
        raise ShapeError('tau_ext: expected one value per joint, got a scalar')
    limits = _positive(thresholds, 'thresholds', tau_ext.shape[-1:])
    return np.abs(tau_ext) > limits


def observe(model: Model, gain: ArrayLike, q: ArrayLike, v: ArrayLike, tau_measured: ArrayLike,
            t: ArrayLike, *, friction: bool = False) -> np.ndarray:
    """Run a :class:`MomentumObserver` over a recording: ``q`` (n, nq), ``v`` and
    ``tau_measured`` (n, nv), sample times ``t`` (n,) [s], increasing. Returns the estimates
    ``tau_ext`` (n, nv), zeros for the first sample.
    """
    t = as_finite_array(t, 't')
    q = as_configuration(model, q, 'q')
    if t.ndim != 1 or q.shape[:-1] != t.shape:
        raise ShapeError(f't: expected one time per row of q {q.shape}, got shape {t.shape}')
    observer = MomentumObserver(model, gain, friction=friction)
    v = as_velocity(model, v, 'v', q.shape[:-1])
    tau = as_velocity(model, tau_measured, 'tau_measured', q.shape[:-1])
    out = np.zeros(v.shape)
    previous: Optional[float] = None
    for k in range(t.size):
        out[k] = observer.update(q[k], v[k], tau[k], 0.0 if previous is None else t[k] - previous)
        previous = t[k]
    return out
