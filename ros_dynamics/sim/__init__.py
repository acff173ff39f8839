"""Simulated robots for closed-loop checks of the package's torques: MuJoCo, not our engine."""
