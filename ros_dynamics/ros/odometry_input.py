"""The base state of the dynamics node: ``nav_msgs/Odometry`` on ``odom`` for a floating or
planar base (validated by :mod:`~ros_dynamics.ros.base_state`), else the static ``base_pose``.

The subscription exists when ``root_joint`` is set (read-only, so for the node's life). The
latest valid odometry is the base state from then on, replaced whole; a rejected one is
counted (``odometry_rejected``), warned (throttled per cause) and the previous state kept.
Odometry older than ``odometry.timeout`` (by the time it was received) is stale: still used,
and the diagnostics WARN until a fresh one arrives.
"""
import time

from nav_msgs.msg import Odometry
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy

from .base_state import InvalidOdometry, base_from_odometry, full_state, static_base

#: QoS of ``odom``: best effort matches sensor-data and reliable publishers.
ODOMETRY_QOS = QoSProfile(depth=10, reliability=ReliabilityPolicy.BEST_EFFORT,
                          durability=DurabilityPolicy.VOLATILE, history=HistoryPolicy.KEEP_LAST)


class OdometryInput:
    """Where the node's base state comes from (see the module docstring)."""

    def __init__(self, node, root_joint, serving, diagnostics, log, guard):
        """``serving()`` returns what the node serves (or None); ``guard(callback, what)``
        wraps a callback.
        """
        self._serving = serving
        self._diagnostics = diagnostics
        self._log = log
        self._odometry = None                  # BaseState of the latest valid odometry
        if root_joint:
            node.create_subscription(Odometry, 'odom', guard(self._on_odometry, 'odom'),
                                     ODOMETRY_QOS)

    def _on_odometry(self, msg):
        self._diagnostics.count('odometry')
        serving = self._serving()
        if serving is None or not serving.settings.base.root_joint:
            return
        current = serving.settings
        try:
            self._odometry = base_from_odometry(msg, current.base, serving.model.root_link,
                                                current.frame_prefix, time.monotonic())
        except InvalidOdometry as err:
            self._diagnostics.count('odometry_rejected')
            self._log.warning(f'rejected an odometry: {err}')

    def base(self, serving):
        """The :class:`~ros_dynamics.ros.base_state.BaseState` to use with ``serving``, or
        None for a fixed base.
        """
        base = serving.settings.base
        if not base.root_joint:
            return None
        return self._odometry if self._odometry is not None else static_base(base)

    def state(self, serving):
        """``q`` (nq,) and ``v`` (nv,) of the latest joint state and base state (new arrays)."""
        merger = serving.merger
        return full_state(serving.model, serving.settings.initial_q, merger.q, merger.qd,
                          self.base(serving))

    def report(self, serving):
        """Tell the diagnostics where the base state comes from and whether it is stale."""
        if serving is None or not serving.settings.base.root_joint:
            self._diagnostics.conditions = {}
            return
        odometry, timeout = self._odometry, serving.settings.base.odometry_timeout
        if odometry is None:
            source = 'base_pose (no odometry yet)'
            conditions = {}
        else:
            age = time.monotonic() - odometry.received
            source = f'odometry received {age:.3f} s ago'
            conditions = {'odometry': f'odometry stale ({age:.1f} s old, odometry.timeout '
                                      f'{timeout:g} s)'} if odometry.stale(timeout,
                                                                         time.monotonic()) else {}
        self._diagnostics.conditions = conditions
        self._diagnostics.values = {'base_state': source}
