"""Settings of a floating or planar base: its root joint, where its state comes from before any
odometry, its world frame and its contacts -- validated into one :class:`BaseSettings`, part of
:class:`~ros_dynamics.ros.settings.NodeSettings`.

The parameters are declared in :data:`~ros_dynamics.ros.parameters.FLOATING_BASE_PARAMETERS`
(and ``root_joint``). ``contact_frames`` may change at run time; a non-empty list needs a model
with a root joint and names distinct frames of it.
"""
from dataclasses import dataclass
import math

import numpy as np

from .base_state import (
    MAX_BASE_POSITION,
    QUATERNION_TOLERANCE,
    InvalidOdometry,
    root_coordinates,
)
from .parameters import CONTACT_TYPES, ROOT_JOINTS, SettingsError, check_frame_id


@dataclass(frozen=True, eq=False)
class BaseSettings:
    """What the node reads of the base parameters.

    ``root_joint``: '' (fixed base), 'floating' or 'planar'; ``world_frame``: frame id (without
    the frame prefix) of the world the base moves in; ``q_static`` (nq of the root joint,) the
    root joint's coordinates until odometry arrives (None for a fixed base);
    ``odometry_timeout`` [s] (0: never stale); ``contact_frames``, ``contact_type`` ('point' or
    'wrench') and ``friction`` (None: bilateral contacts).
    """

    root_joint: str = ''
    world_frame: str = 'odom'
    q_static: np.ndarray = None
    odometry_timeout: float = 0.5
    contact_frames: tuple = ()
    contact_type: str = 'point'
    friction: float = None


def validate_base(values, model=None):
    """The :class:`BaseSettings` of a full set of parameter values (checked against ``model``'s
    frames and root joint when given). Raises :class:`SettingsError` naming the parameter.
    """
    root_joint = values['root_joint']
    if root_joint not in ROOT_JOINTS:
        raise SettingsError('root_joint', f"expected '', 'floating' or 'planar', got "
                                          f'{root_joint!r}')
    contact_type = values['contacts.type']
    if contact_type not in CONTACT_TYPES:
        raise SettingsError('contacts.type', f"expected 'point' or 'wrench', got "
                                             f'{contact_type!r}'[:300])
    world = values['world_frame']
    check_frame_id('world_frame', world, empty_ok=not root_joint)
    pose = _base_pose(values['base_pose'])
    contacts = tuple(f for f in values['contact_frames'] if f)
    if len(set(contacts)) != len(contacts):
        raise SettingsError('contact_frames', 'a frame is named twice')
    if model is not None:
        model_root = model.root_joint or ''
        if model_root != root_joint:
            raise SettingsError('root_joint', f'the model was built with {model_root!r}')
        if contacts and not root_joint:
            raise SettingsError('contact_frames', "contacts need a floating or planar base "
                                                  "(root_joint 'floating' or 'planar'); a fixed "
                                                  'base is held by the world')
        unknown = [f for f in contacts if f not in model.frame_names]
        if unknown:
            raise SettingsError('contact_frames', f'unknown frames {unknown[:20]}; valid: '
                                                  f'{list(model.frame_names)[:50]}')
    friction = float(values['contacts.friction'])
    try:
        q_static = root_coordinates(root_joint, pose[:3], pose[3:]) if root_joint else None
    except InvalidOdometry as err:
        raise SettingsError('base_pose', str(err)) from None
    return BaseSettings(
        root_joint=root_joint, world_frame=world, q_static=q_static,
        odometry_timeout=float(values['odometry.timeout']), contact_frames=contacts,
        contact_type=contact_type, friction=friction if friction > 0 else None)


def _base_pose(value):
    """``base_pose`` as 7 floats: a bounded position and a unit quaternion (normalised)."""
    pose = np.array(value, dtype=float).ravel()
    if pose.size != 7 or not np.all(np.abs(pose) <= MAX_BASE_POSITION):
        raise SettingsError('base_pose', f'expected 7 finite values x y z qx qy qz qw, '
                                         f'positions at most {MAX_BASE_POSITION:g} m, got '
                                         f'{list(value)[:20]}')
    norm = math.sqrt(float(pose[3:] @ pose[3:]))
    if abs(norm - 1.0) > QUATERNION_TOLERANCE:
        raise SettingsError('base_pose', f'expected a unit quaternion (norm within '
                                         f'{QUATERNION_TOLERANCE:g} of 1), got a norm of '
                                         f'{norm:.6g}')
    pose[3:] /= norm
    return pose
