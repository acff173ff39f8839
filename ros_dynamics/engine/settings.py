"""Run-time dynamic settings of a model: gravity, payloads, rotor inertia and joint friction.

These are what may change while a robot runs (a tool is mounted, the robot is on the Moon),
unlike the model's topology and described inertials. They form one immutable, validated value,
:class:`DynamicSettings`, that a model holds and replaces in one assignment
(``model.settings = model.make_settings(...)``): a reader in another thread sees the old
settings or the new ones, never a mix, and every algorithm reads the value once per call.

Bounds: a settings value is refused (:class:`~ros_dynamics.engine.exceptions.ModelError`,
naming the field) unless every number is finite and within :data:`LIMITS`, far beyond any robot
and well below where torques could overflow.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Optional, Union

import numpy as np

from .checks import as_finite_array
from .exceptions import InvalidInputError, ModelError, ShapeError
from .rotations import skew
from .spatial import lump_inertias, spatial_inertia

#: Default gravity [m/s^2] in the world frame: REP 103 puts z up; Pinocchio uses the same value.
DEFAULT_GRAVITY = (0.0, 0.0, -9.81)

#: Largest magnitudes accepted: gravity [m/s^2], payload mass [kg], payload center of mass
#: offset [m], payload inertia [kg m^2], rotor inertia [kg m^2 or kg], damping and Coulomb
#: friction [N m s/rad, N m or the prismatic units].
LIMITS = {'gravity': 1e4, 'mass': 1e6, 'com': 1e3, 'inertia': 1e6, 'rotor_inertia': 1e6,
          'damping': 1e9, 'coulomb': 1e9}

PerJoint = Union[Sequence[float], np.ndarray, Mapping[str, float]]


def _frozen(a):
    a = np.array(a, dtype=float)
    a.setflags(write=False)
    return a


def _bounded(values, what, limit, *, non_negative=False, shape=None):
    """``values`` as a float array of ``shape`` (any when None), finite, within +-limit (and
    >= 0); :class:`ModelError` (:class:`ShapeError` for the shape) naming ``what`` otherwise.
    """
    try:
        arr = as_finite_array(values, what, limit)
    except InvalidInputError as err:
        raise ModelError(str(err)) from None
    if shape is not None and arr.shape != shape:
        raise ShapeError(f'{what}: expected shape {shape}, got {arr.shape}')
    if non_negative and np.any(arr < 0):
        shown = arr.tolist() if arr.size <= 12 else f'{arr.size} values'
        raise ModelError(f'{what}: expected values >= 0, got {shown}')
    return arr


@dataclass(frozen=True)
class Payload:
    """A rigid payload fixed to a frame: ``mass`` [kg], ``com`` (3,) [m] and ``inertia``
    (3, 3) [kg m^2] about its center of mass, both in the frame's coordinates.
    """

    frame: str
    mass: float
    com: np.ndarray = field(default_factory=lambda: np.zeros(3))
    inertia: np.ndarray = field(default_factory=lambda: np.zeros((3, 3)))

    def validated(self) -> Payload:
        """The same payload with read-only arrays; :class:`ModelError` naming the fault
        unless the mass is finite and >= 0 and the inertia symmetric positive semi-definite.
        """
        where = f'payload on {self.frame!r}'
        if not isinstance(self.frame, str):
            raise ModelError(f'payload: frame must be a frame name, got {self.frame!r}')
        mass = float(_bounded(self.mass, f'{where}: mass', LIMITS['mass'], non_negative=True,
                              shape=()))
        com = _bounded(self.com, f'{where}: com', LIMITS['com'], shape=(3,))
        inertia = _bounded(self.inertia, f'{where}: inertia', LIMITS['inertia'], shape=(3, 3))
        scale = float(np.max(np.abs(inertia))) + 1e-300
        if np.max(np.abs(inertia - inertia.T)) > 1e-9 * scale or \
                np.linalg.eigvalsh(inertia)[0] < -1e-9 * scale:
            raise ModelError(f'{where}: inertia must be symmetric positive semi-definite, got '
                             f'{inertia.tolist()}')
        return Payload(self.frame, mass, _frozen(com), _frozen(inertia))


@dataclass(frozen=True)
class DynamicSettings:
    """One consistent set of run-time dynamic settings of one model (see the module docstring).

    gravity (3,) [m/s^2] in the world frame; rotor_inertia (nv,) [kg m^2 or kg], reflected at
    the joints; damping (nv,) viscous [N m s/rad or N s/m] and coulomb (nv,) [N m or N] joint
    friction (URDF ``<dynamics>`` by default), applied where an algorithm is asked for friction;
    payloads; and what they imply per body (body 0 the fixed base): body_mass (n_bodies,),
    body_com (n_bodies, 3) in body frames and body_inertia (n_bodies, 3, 3) about the body's
    center of mass, payloads included.

    Derived once, for the algorithms: body_mass_moment (n_bodies, 4), ``[m c; m]`` per body
    in its frame (a pose times it gives the world first moment and the mass);
    body_spatial_inertia (n_bodies, 6, 6) about each body's origin in its axes; weight_map
    (4, 6), which turns a mass ``M`` with world first moment ``C`` into its weight as a
    wrench at the world origin, ``[C; M] @ weight_map = [M g; C x g]``; base_acceleration
    (6,), ``[-g; 0]``, the spatial acceleration the base is given to account for gravity.
    """

    gravity: np.ndarray
    rotor_inertia: np.ndarray
    damping: np.ndarray
    coulomb: np.ndarray
    payloads: tuple[Payload, ...]
    body_mass: np.ndarray
    body_com: np.ndarray
    body_inertia: np.ndarray
    #: Identity of the model these settings were made for (a model takes no other's).
    model_key: Any = field(repr=False, compare=False, default=None)
    body_mass_moment: np.ndarray = field(init=False, repr=False, compare=False)
    body_spatial_inertia: np.ndarray = field(init=False, repr=False, compare=False)
    weight_map: np.ndarray = field(init=False, repr=False, compare=False)
    base_acceleration: np.ndarray = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        weight_map = np.zeros((4, 6))
        weight_map[:3, 3:] = skew(self.gravity)          # C x g = -[g]x C, as a row: C^T [g]x
        weight_map[3, :3] = self.gravity
        derived = dict(
            body_mass_moment=np.concatenate([self.body_mass[:, None] * self.body_com,
                                             self.body_mass[:, None]], axis=1),
            body_spatial_inertia=spatial_inertia(self.body_mass, self.body_com,
                                                 self.body_inertia),
            weight_map=weight_map,
            base_acceleration=np.concatenate([-self.gravity, np.zeros(3)]))
        for name, value in derived.items():
            object.__setattr__(self, name, _frozen(value))


def per_joint(model, values: Optional[PerJoint], default: np.ndarray, what: str,
              limit: float) -> np.ndarray:
    """For ``model`` (a :class:`~ros_dynamics.engine.model.Model`), a (nv,) array from
    ``values``: None (``default``), an array (nv,), or a mapping joint
    name -> value over ``default`` (a multi-DOF joint's value for each of its coordinates);
    finite, >= 0 and within ``limit``.
    """
    if values is None:
        out = np.array(default, dtype=float)
    elif isinstance(values, Mapping):
        out = np.array(default, dtype=float)
        for name, v in values.items():
            i = model.joint_index(name)
            start = model.joint_idx_v[i]
            out[start:start + model.joint_nv[i]] = float(
                _bounded(v, f'{what} of {name!r}', limit, non_negative=True, shape=()))
    else:
        out = values
    return _bounded(out, what, limit, non_negative=True, shape=(model.nv,))


def make_settings(model, *, gravity: Sequence[float] = DEFAULT_GRAVITY,
                  rotor_inertia: Optional[PerJoint] = None, damping: Optional[PerJoint] = None,
                  coulomb: Optional[PerJoint] = None,
                  payloads: Sequence[Payload] = ()) -> DynamicSettings:
    """Validated :class:`DynamicSettings` for ``model`` (a
    :class:`~ros_dynamics.engine.model.Model`, which imports this module: it is not imported
    back): ``gravity`` (3,) [m/s^2] in the world
    frame; ``rotor_inertia``, ``damping``, ``coulomb`` per joint (array (nv,) or mapping name ->
    value; defaults: zero rotor inertia, the URDF ``<dynamics>`` friction); ``payloads``, at most
    one per frame (a mass of 0 is no payload). Raises :class:`ModelError` or
    :class:`ShapeError` naming the value at fault.
    """
    g = _bounded(gravity, 'gravity', LIMITS['gravity'], shape=(3,))
    rotor = per_joint(model, rotor_inertia, np.zeros(model.nv), 'rotor inertia',
                      LIMITS['rotor_inertia'])
    damp = per_joint(model, damping, model.joint_damping, 'damping', LIMITS['damping'])
    coul = per_joint(model, coulomb, model.joint_friction, 'coulomb friction', LIMITS['coulomb'])
    checked, frames = [], set()
    for payload in payloads:
        if not isinstance(payload, Payload):
            raise ModelError(f'payloads: expected Payload values, got {type(payload).__name__}')
        model.frame_index(payload.frame)
        if payload.frame in frames:
            raise ModelError(f'payloads: two payloads on frame {payload.frame!r}')
        frames.add(payload.frame)
        payload = payload.validated()
        if payload.mass > 0:
            checked.append(payload)
    mass, com, inertia = _bodies_with(model, checked)
    return DynamicSettings(gravity=_frozen(g), rotor_inertia=_frozen(rotor),
                           damping=_frozen(damp), coulomb=_frozen(coul), payloads=tuple(checked),
                           body_mass=_frozen(mass), body_com=_frozen(com),
                           body_inertia=_frozen(inertia), model_key=model.key)


def _bodies_with(model, payloads):
    """Per-body mass properties of the described bodies with the payloads fixed to them."""
    mass = model.described_body_mass
    com = model.described_body_com
    inertia = model.described_body_inertia
    if not payloads:
        return mass, com, inertia
    mass, com, inertia = np.array(mass), np.array(com), np.array(inertia)
    for p in payloads:
        f = model.frame_index(p.frame)
        b = model.frame_body[f]
        T = model.frame_placement[f]
        R = T[:3, :3]
        mass[b], com[b], inertia[b] = lump_inertias(
            [mass[b], p.mass], [com[b], R @ p.com + T[:3, 3]], [inertia[b], R @ p.inertia @ R.T])
    return mass, com, inertia
