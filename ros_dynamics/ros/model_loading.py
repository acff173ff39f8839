"""Robot models for the node: where a description comes from, building one, refusing one.

Sources, robot_state_publisher's conventions: the ``robot_description`` parameter, else the
``urdf_file`` parameter, else the ``robot_description`` topic (subscribed by the node). A
description that does not build is refused with the engine's reason
(:class:`DescriptionRefused`); the caller keeps its previous model.
"""
from ..engine import DynamicsError, RobotModel

#: Source named in logs for a description received on the topic.
TOPIC_SOURCE = 'the robot_description topic'


class DescriptionRefused(Exception):
    """A robot description that does not give a model; the message says why."""


def initial_description(robot_description, urdf_file):
    """The description to start with and its source: ``(xml, source)``, or ``(None, None)``
    when neither parameter holds one (then the topic will). Raises :class:`DescriptionRefused`
    when ``urdf_file`` cannot be read.
    """
    if robot_description:
        return robot_description, 'the robot_description parameter'
    if urdf_file:
        try:
            with open(urdf_file, encoding='utf-8') as f:
                return f.read(), f'urdf_file {urdf_file!r}'
        except OSError as err:
            raise DescriptionRefused(f'cannot read urdf_file {urdf_file!r}: {err}') from None
    return None, None


def build_model(xml, *, strict):
    """A :class:`~ros_dynamics.engine.RobotModel` from URDF text; ``strict`` refuses physically
    impossible inertials. Raises :class:`DescriptionRefused` with the engine's reason.
    """
    try:
        return RobotModel.from_urdf_string(xml, strict=strict)
    except DynamicsError as err:
        raise DescriptionRefused(str(err)) from None
