"""Simulated robots for closed-loop checks of the package's torques: MuJoCo, not our engine."""

from ..engine.exceptions import InvalidInputError


class SimulationDiverged(InvalidInputError):
    """A step was undone: the inputs held made the simulation diverge (see
    :meth:`ros_dynamics.sim.robot.SimulatedRobot.step`). Here, not in :mod:`.robot`, so that
    catching it does not import MuJoCo.
    """
