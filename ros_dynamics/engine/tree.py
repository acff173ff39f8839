"""Kinematic-tree assembly: from link and joint descriptions to the arrays algorithms use.

Builders (URDF, DH) describe a robot as :class:`LinkSpec` and :class:`JointSpec` records;
:func:`assemble` validates the tree and produces a :class:`Topology`:

* moving joints (every type of :data:`~ros_dynamics.engine.joints.JOINT_MODELS`) in depth-first
  order from the root, children in the order the description lists their joints; each one's
  child link starts a *body*;
* body 0 is the fixed base (the root link and everything fixed to it); body ``k + 1`` is moved
  by moving joint ``k``; ``fixed`` joints are collapsed: their child links are merged into the
  body of their parent for dynamics and kept as frames;
* with a root joint (``'floating'`` or ``'planar'``, as Pinocchio's ``root_joint``), moving
  joint 0 is that joint, named :data:`ROOT_JOINT_NAME`, between the world (body 0, which then
  holds no link) and the root link;
* the independent joints (``joint_names``) are the moving joints that are not mimic joints, in
  the same order; a mimic joint follows ``q_mimic = multiplier * q_leader + offset``, resolved
  through chains of mimic joints down to an independent joint.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Optional
import warnings

import numpy as np

from .exceptions import InertiaError, InertiaWarning, ModelError, UrdfError
from .joints import JOINT_MODELS, ONE_DOF_TYPES
from .spatial import lump_inertias

MOVING_TYPES = tuple(JOINT_MODELS)
JOINT_TYPES = MOVING_TYPES + ('fixed',)
#: Name of the joint a root joint adds between the world and the root link (Pinocchio's).
ROOT_JOINT_NAME = 'root_joint'
#: Root joints a model can be given at load (``None``: the root link is the fixed base).
ROOT_JOINTS = (None, 'floating', 'planar')

# Inertia checks: a moment counts as negative, or a triangle inequality as violated, only beyond
# this fraction of the largest principal moment plus an absolute floor [kg m^2] (real
# descriptions carry rounding noise, e.g. moments of 1e-20 around an intended zero).
INERTIA_REL_TOL = 1e-6
INERTIA_ABS_TOL = 1e-12


@dataclass(frozen=True)
class Inertial:
    """Mass properties of a link in its own frame.

    mass [kg]; com (3,) [m], the center of mass in the link frame; inertia (3, 3) [kg m^2],
    the rotational inertia about the center of mass in link axes (the URDF ``<inertial><origin>``
    rotation already applied: ``I = R I_bar R^T``).
    """

    mass: float
    com: np.ndarray
    inertia: np.ndarray


@dataclass(frozen=True)
class MimicSpec:
    """``q_this = multiplier * q_joint + offset``."""

    joint: str
    multiplier: float = 1.0
    offset: float = 0.0


@dataclass(frozen=True)
class LinkSpec:
    """A link: a frame, with its inertial if it has one."""

    name: str
    inertial: Optional[Inertial] = None


@dataclass(frozen=True)
class JointSpec:
    """A joint between two links.

    origin (4, 4): pose of the child link frame in the parent link frame at q = 0. axis (3,):
    unit axis in the child (joint) frame. Limits: position [rad or m] (+-inf for continuous),
    velocity [rad/s or m/s], effort [N m or N]; damping and friction from ``<dynamics>``.
    """

    name: str
    type: str
    parent: str
    child: str
    origin: np.ndarray
    axis: np.ndarray = field(default_factory=lambda: np.array([1.0, 0.0, 0.0]))
    lower: float = -np.inf
    upper: float = np.inf
    velocity: float = np.inf
    effort: float = np.inf
    damping: float = 0.0
    friction: float = 0.0
    mimic: Optional[MimicSpec] = None


@dataclass(frozen=True)
class Topology:
    """Validated tree in the arrays the algorithms read (see the module docstring)."""

    root: str
    joints: tuple            # every JointSpec, by name order of the description
    moving: tuple            # moving JointSpecs in depth-first order
    parent_body: np.ndarray  # (n_moving,) body index of each moving joint's parent
    placement: np.ndarray    # (n_moving, 4, 4) T_parentbody_joint at q = 0
    axis: np.ndarray         # (n_moving, 3) unit axes in the joint frame
    models: tuple            # (n_moving,) the JointModel of each moving joint
    q_index: np.ndarray      # (n_moving,) index of the independent joint each one follows
    multiplier: np.ndarray   # (n_moving,)
    offset: np.ndarray       # (n_moving,)
    independent: tuple       # names of the independent joints (q order)
    link_body: dict          # link name -> body index
    link_placement: dict     # link name -> T_body_link (4, 4)
    link_order: tuple        # link names, depth-first
    body_mass: np.ndarray    # (n_bodies,)
    body_com: np.ndarray     # (n_bodies, 3) in the body frame
    body_inertia: np.ndarray  # (n_bodies, 3, 3) about the body's center of mass, body axes
    warnings: tuple          # human-readable notes on suspicious inertials


def assemble(links, joints, *, strict=False, root_joint=None):
    """Validate links and joints as one tree and compute its :class:`Topology`; ``root_joint``
    (one of :data:`ROOT_JOINTS`) joins the root link to the world.

    Raises :class:`UrdfError` naming the element at fault; physically impossible inertials
    raise :class:`InertiaError` when ``strict`` and otherwise give one :class:`InertiaWarning`.
    """
    if root_joint not in ROOT_JOINTS:
        raise ModelError(f'root_joint: expected one of {ROOT_JOINTS}, got {root_joint!r}')
    link_map = _unique(links, 'link')
    joint_map = _unique(joints, 'joint')
    if not link_map:
        raise UrdfError('the robot has no links')
    if root_joint is not None and ROOT_JOINT_NAME in joint_map:
        raise UrdfError(f'a joint of the description is named {ROOT_JOINT_NAME!r}, the name of '
                        'the root joint added at load')
    child_of = {}
    children = {name: [] for name in link_map}
    for j in joints:
        if j.type not in JOINT_TYPES:
            raise UrdfError(f'joint {j.name!r}: unsupported type {j.type!r}; supported types: '
                            f'{", ".join(JOINT_TYPES)}')
        for role, link in (('parent', j.parent), ('child', j.child)):
            if link not in link_map:
                raise UrdfError(f'joint {j.name!r}: unknown {role} link {link!r}')
        if j.parent == j.child:
            raise UrdfError(f'joint {j.name!r}: parent and child are the same link {j.child!r}')
        if j.child in child_of:
            raise UrdfError(f'link {j.child!r} is the child of two joints, {child_of[j.child]!r} '
                            f'and {j.name!r} (a kinematic loop; URDF describes trees)')
        child_of[j.child] = j.name
        children[j.parent].append(j)
    roots = [name for name in link_map if name not in child_of]
    if not roots:
        raise UrdfError('no root link: every link is the child of a joint (a kinematic loop)')
    if len(roots) > 1:
        raise UrdfError(f'the tree has {len(roots)} root links, {roots}; exactly one link may '
                        'have no parent joint')
    root = roots[0]

    # Depth-first walk from the root; a link never reached lies on a loop.
    order, stack = [], [root]
    while stack:
        link = stack.pop()
        order.append(link)
        stack.extend(j.child for j in reversed(children[link]))
    if len(order) != len(link_map):
        lost = [name for name in link_map if name not in set(order)]
        raise UrdfError(f'links {lost} are not connected to the root {root!r} (a kinematic loop)')

    _check_joint_values(joints)
    moving, parent_body, placement, link_body, link_placement = [], [], [], {root: 0}, {}
    link_placement[root] = np.eye(4)
    if root_joint is not None:
        moving.append(JointSpec(ROOT_JOINT_NAME, root_joint, parent='', child=root,
                                origin=np.eye(4), axis=np.array([0.0, 0.0, 1.0])))
        parent_body.append(0)
        placement.append(np.eye(4))
        link_body[root] = 1
    for link in order[1:]:
        j = joint_map[child_of[link]]
        body = link_body[j.parent]
        T_body_child = link_placement[j.parent] @ j.origin
        if j.type == 'fixed':
            link_body[link] = body
            link_placement[link] = T_body_child
        else:
            moving.append(j)
            parent_body.append(body)
            placement.append(T_body_child)
            link_body[link] = len(moving)
            link_placement[link] = np.eye(4)

    independent = [j.name for j in moving if j.mimic is None]
    q_index, multiplier, offset = _resolve_mimics(moving, joint_map, independent)
    n_bodies = len(moving) + 1
    mass, com, inertia, notes = _merge_inertials(link_map, link_body, link_placement, n_bodies,
                                                 order)
    notes += _massless_subtrees(moving, parent_body, mass)
    if notes:
        if strict:
            raise InertiaError('physically impossible inertials: ' + _summary(notes))
        warnings.warn('robot description: ' + _summary(notes), InertiaWarning, stacklevel=3)

    return Topology(
        root=root,
        joints=tuple(joints),
        moving=tuple(moving),
        parent_body=np.array(parent_body, dtype=int),
        placement=np.array(placement).reshape(-1, 4, 4),
        axis=np.array([j.axis for j in moving], dtype=float).reshape(-1, 3),
        models=tuple(JOINT_MODELS[j.type] for j in moving),
        q_index=q_index, multiplier=multiplier, offset=offset,
        independent=tuple(independent),
        link_body=link_body, link_placement=link_placement, link_order=tuple(order),
        body_mass=mass, body_com=com, body_inertia=inertia,
        warnings=tuple(notes),
    )


def _summary(notes, shown=5):
    """The first ``shown`` notes and how many more (a message stays short for any model)."""
    more = f'; and {len(notes) - shown} more' if len(notes) > shown else ''
    return '; '.join(notes[:shown]) + more


def _unique(items, kind):
    seen = {}
    for item in items:
        if item.name in seen:
            raise UrdfError(f'duplicate {kind} name {item.name!r}')
        seen[item.name] = item
    return seen


def _check_joint_values(joints):
    for j in joints:
        if not np.all(np.isfinite(j.origin)):
            raise UrdfError(f'joint {j.name!r}: <origin> holds a non-finite number')
        if j.type not in ONE_DOF_TYPES:
            continue                    # fixed; floating and planar have neither axis nor limits
        norm = np.linalg.norm(j.axis)
        if not np.isfinite(norm) or norm < 1e-12:
            raise UrdfError(f'joint {j.name!r}: <axis> must be a finite non-zero vector, got '
                            f'{np.asarray(j.axis).tolist()}')
        if j.type != 'continuous':
            if np.isnan(j.lower) or np.isnan(j.upper) or j.lower > j.upper:
                raise UrdfError(f'joint {j.name!r}: position limits lower={j.lower} > '
                                f'upper={j.upper}')
        for label, value in (('velocity', j.velocity), ('effort', j.effort),
                             ('damping', j.damping), ('friction', j.friction)):
            if np.isnan(value) or value < 0:
                raise UrdfError(f'joint {j.name!r}: {label} must be >= 0, got {value}')


def _resolve_mimics(moving, joint_map, independent):
    """Per moving joint: the independent joint it follows, multiplier and offset. Each joint is
    resolved once (chains of mimic joints share their tails), so this is linear in size.
    """
    index_of = {name: i for i, name in enumerate(independent)}
    resolved = {name: (i, 1.0, 0.0) for name, i in index_of.items()}
    for j in moving:
        path, on_path = [], set()
        cur = j
        while cur.name not in resolved:
            m = cur.mimic
            if m.joint not in joint_map:
                raise UrdfError(f'joint {cur.name!r}: <mimic> names unknown joint {m.joint!r}')
            if not (np.isfinite(m.multiplier) and np.isfinite(m.offset)):
                raise UrdfError(f'joint {cur.name!r}: <mimic> multiplier/offset must be finite')
            leader = joint_map[m.joint]
            if cur.type not in ONE_DOF_TYPES:
                raise UrdfError(f'joint {cur.name!r}: a {cur.type} joint cannot be a <mimic>; '
                                f'mimic joints are one of {ONE_DOF_TYPES}')
            if leader.type not in ONE_DOF_TYPES:
                raise UrdfError(f'joint {cur.name!r}: <mimic> leader {m.joint!r} is a '
                                f'{leader.type} joint; it must be one of {ONE_DOF_TYPES}')
            path.append(cur)
            on_path.add(cur.name)
            if leader.name in on_path:
                names = [p.name for p in path] + [leader.name]
                raise UrdfError(f'mimic cycle: {" -> ".join(names)}')
            cur = leader
        q, mult, off = resolved[cur.name]
        for follower in reversed(path):        # q_f = m_f (mult q + off) + o_f
            m = follower.mimic
            mult, off = m.multiplier * mult, m.multiplier * off + m.offset
            resolved[follower.name] = (q, mult, off)
    rows = [resolved[j.name] for j in moving]
    return (np.array([r[0] for r in rows], dtype=int), np.array([r[1] for r in rows], dtype=float),
            np.array([r[2] for r in rows], dtype=float))


def inertia_problems(name: str, inertial: object):
    """Physical-consistency problems of one inertial (empty list when plausible).

    Mass must be > 0 for a link that carries inertia, the inertia positive semi-definite and its
    principal moments must satisfy the triangle inequality, each within :data:`INERTIA_REL_TOL`
    of the largest moment plus :data:`INERTIA_ABS_TOL` (rounding noise is accepted).
    """
    problems = []
    I = inertial.inertia
    if not np.allclose(I, I.T, rtol=1e-9, atol=1e-12):
        problems.append(f'link {name!r}: inertia matrix is not symmetric')
    moments = np.linalg.eigvalsh(0.5 * (I + I.T))
    scale = max(float(np.max(np.abs(moments))), 1e-300)
    tol = INERTIA_REL_TOL * scale + INERTIA_ABS_TOL
    if inertial.mass == 0.0:
        if scale > INERTIA_ABS_TOL:
            problems.append(f'link {name!r}: zero mass but non-zero inertia')
        return problems
    if moments[0] < -tol:
        problems.append(f'link {name!r}: inertia is not positive semi-definite (principal '
                        f'moments {np.array2string(moments, precision=4)})')
    elif moments[0] + moments[1] < moments[2] - tol:
        problems.append(f'link {name!r}: principal moments {np.array2string(moments, precision=4)}'
                        ' violate the triangle inequality')
    return problems


def _merge_inertials(link_map, link_body, link_placement, n_bodies, order):
    """Per body: mass, center of mass and inertia about it, in the body frame, of the links
    fixed to it (their inertials moved by the links' placements in the body).
    """
    notes = []
    parts = [[] for _ in range(n_bodies)]
    for name in order:
        inertial = link_map[name].inertial
        if inertial is None:
            continue
        values = np.concatenate([[inertial.mass], inertial.com, np.ravel(inertial.inertia)])
        if not np.all(np.isfinite(values)):
            raise UrdfError(f'link {name!r}: <inertial> holds a non-finite number')
        if inertial.mass < 0:
            raise UrdfError(f'link {name!r}: negative mass {inertial.mass} kg')
        notes += inertia_problems(name, inertial)
        T = link_placement[name]
        R = T[:3, :3]
        parts[link_body[name]].append((inertial.mass, R @ inertial.com + T[:3, 3],
                                       R @ inertial.inertia @ R.T))
    mass = np.zeros(n_bodies)
    com = np.zeros((n_bodies, 3))
    inertia = np.zeros((n_bodies, 3, 3))
    for b, body_parts in enumerate(parts):
        if len(body_parts) == 1:
            mass[b], com[b], inertia[b] = body_parts[0]
        elif body_parts:
            m, c, i = zip(*body_parts)
            mass[b], com[b], inertia[b] = lump_inertias(m, c, i)
    return mass, com, inertia, notes


def _massless_subtrees(moving, parent_body, mass):
    """Moving joints whose whole subtree has no mass (the mass matrix loses rank there)."""
    subtree = mass.copy()
    for k in range(len(moving) - 1, -1, -1):
        subtree[parent_body[k]] += subtree[k + 1]
    return [f'joint {j.name!r} moves a subtree with no mass' for k, j in enumerate(moving)
            if subtree[k + 1] <= 0.0]


def moved_links(joints: Sequence):
    """Names of the links some non-fixed joint moves (directly or through fixed joints)."""
    parent = {j.child: j for j in joints}
    moved = {}
    for link in parent:
        path = []
        while link not in moved and link in parent and len(path) <= len(parent):
            path.append(link)                    # up to a known link or the root (or a loop,
            link = parent[link].parent           # which the tree check reports)
        known = moved.get(link, False)
        for name in reversed(path):
            known = known or parent[name].type != 'fixed'
            moved[name] = known
    return {link for link, is_moved in moved.items() if is_moved}
