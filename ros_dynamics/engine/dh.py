"""Robot descriptions from modified Denavit-Hartenberg tables (Craig's convention).

Row i describes joint i and the link it moves with ``(a_{i-1}, alpha_{i-1}, d_i, theta_i)``:
``T_{i-1,i} = Rx(alpha_{i-1}) Tx(a_{i-1}) Rz(theta_i) Tz(d_i)``. The joint variable adds to
``theta_i`` (revolute) or to ``d_i`` (prismatic). Lengths in [m], angles in [rad].
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from .exceptions import ModelError
from .rotations import matrix_from_rpy
from .spatial import transform
from .tree import Inertial, JointSpec, LinkSpec

_TYPES = ('revolute', 'prismatic', 'continuous')


def _rx(a):
    c, s = np.cos(a), np.sin(a)
    return np.array([[1, 0, 0, 0], [0, c, -s, 0], [0, s, c, 0], [0, 0, 0, 1.0]])


def _rz(a):
    c, s = np.cos(a), np.sin(a)
    return np.array([[c, -s, 0, 0], [s, c, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1.0]])


def _translation(x, y, z):
    T = np.eye(4)
    T[:3, 3] = (x, y, z)
    return T


def dh_transform(a: float, alpha: float, d: float, theta: float) -> np.ndarray:
    """``Rx(alpha) Tx(a) Rz(theta) Tz(d)`` (4, 4): one modified-DH link transform."""
    return _rx(alpha) @ _translation(a, 0, 0) @ _rz(theta) @ _translation(0, 0, d)


def _inertial(value, where):
    if value is None or isinstance(value, Inertial):
        return value
    if isinstance(value, Mapping):
        mass, com, inertia = value.get('mass'), value.get('com', (0, 0, 0)), \
            value.get('inertia', np.zeros((3, 3)))
    else:
        try:
            mass, com, inertia = value
        except (TypeError, ValueError):
            raise ModelError(f'{where}: inertial must be (mass, com, inertia) or a dict') from None
    com = np.asarray(com, dtype=float)
    inertia = np.asarray(inertia, dtype=float)
    if inertia.shape == (3,):
        inertia = np.diag(inertia)
    if com.shape != (3,) or inertia.shape != (3, 3):
        raise ModelError(f'{where}: com must have 3 values and inertia 3x3 (or 3 principal '
                         f'moments), got shapes {com.shape} and {inertia.shape}')
    return Inertial(float(mass), com, inertia)


def _limits(value, jtype, where):
    out = {'lower': -np.inf, 'upper': np.inf, 'velocity': np.inf, 'effort': np.inf}
    if value is None:
        if jtype == 'prismatic':
            raise ModelError(f'{where}: a prismatic joint needs limits (lower, upper)')
        if jtype == 'revolute':
            out['lower'], out['upper'] = -np.pi, np.pi
        return out
    if isinstance(value, Mapping):
        unknown = set(value) - set(out)
        if unknown:
            raise ModelError(f'{where}: unknown limit keys {sorted(unknown)}; valid: {list(out)}')
        out.update({k: float(v) for k, v in value.items()})
    else:
        try:
            lower, upper = value
        except (TypeError, ValueError):
            raise ModelError(f'{where}: limits must be (lower, upper) or a dict') from None
        out['lower'], out['upper'] = float(lower), float(upper)
    if jtype == 'continuous':
        out['lower'], out['upper'] = -np.inf, np.inf
    return out


def specs_from_dh(rows: Sequence, tool: object = None, base_frame: str = 'base_link'):
    """Links and joints of a serial arm from modified-DH ``rows``.

    A row is ``(a, alpha, d, theta, type[, limits[, inertial]])`` or a dict with those keys;
    ``type`` is ``'revolute'``, ``'continuous'`` or ``'prismatic'``; ``limits`` is
    ``(lower, upper)`` or a dict with lower/upper/velocity/effort (revolute default
    ``(-pi, pi)``); ``inertial`` is ``(mass [kg], com (3,) [m], inertia (3, 3) or its 3 principal
    moments [kg m^2])`` about the center of mass in the link frame, or None (massless).
    Links are named ``link1 ... linkN`` after ``base_frame``, joints ``joint1 ... jointN``;
    ``tool`` (4x4, or ``(xyz, rpy)``) adds a fixed frame ``tool`` on the last link.
    """
    links = [LinkSpec(base_frame)]
    joints = []
    parent = base_frame
    for i, row in enumerate(rows, start=1):
        where = f'DH row {i}'
        if isinstance(row, Mapping):
            row = (row.get('a', 0.0), row.get('alpha', 0.0), row.get('d', 0.0),
                   row.get('theta', 0.0), row.get('type', 'revolute'), row.get('limits'),
                   row.get('inertial'))
        row = tuple(row)
        if not 5 <= len(row) <= 7:
            raise ModelError(f'{where}: expected (a, alpha, d, theta, type[, limits, inertial]), '
                             f'got {len(row)} values')
        a, alpha, d, theta, jtype = row[:5]
        if jtype not in _TYPES:
            raise ModelError(f'{where}: joint type must be one of {_TYPES}, got {jtype!r}')
        try:
            a, alpha, d, theta = (float(x) for x in (a, alpha, d, theta))
        except (TypeError, ValueError):
            raise ModelError(f'{where}: a, alpha, d, theta must be numbers') from None
        if not np.all(np.isfinite([a, alpha, d, theta])):
            raise ModelError(f'{where}: a, alpha, d, theta must be finite')
        limits = _limits(row[5] if len(row) > 5 else None, jtype, where)
        inertial = _inertial(row[6] if len(row) > 6 else None, where)
        child = f'link{i}'
        links.append(LinkSpec(child, inertial))
        joints.append(JointSpec(name=f'joint{i}', type=jtype, parent=parent, child=child,
                                origin=dh_transform(a, alpha, d, theta),
                                axis=np.array([0.0, 0.0, 1.0]), **limits))
        parent = child
    if not joints:
        raise ModelError('a DH table needs at least one row')
    if tool is not None:
        if isinstance(tool, tuple) and len(tool) == 2:
            T_tool = transform(matrix_from_rpy(tool[1]), tool[0])
        else:
            T_tool = np.asarray(tool, dtype=float)
        if T_tool.shape != (4, 4):
            raise ModelError(f'tool: expected a 4x4 transform or (xyz, rpy), got {T_tool.shape}')
        links.append(LinkSpec('tool'))
        joints.append(JointSpec(name='tool_joint', type='fixed', parent=parent, child='tool',
                                origin=T_tool))
    return links, joints
