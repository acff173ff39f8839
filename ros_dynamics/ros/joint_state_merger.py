"""Merging partial joint states into the latest full state, with validation (no ROS types).

robot_state_publisher's rules: a message whose ``position`` and ``name`` lengths differ is
dropped; so is one with NaN or Inf where a number is needed. ``velocity`` may be empty (zero
velocity) or as long as ``name``. Names the model does not know are ignored (reported once).
"""
import numpy as np


class InvalidJointState(ValueError):
    """A joint state message that must be dropped; the message says why."""


class JointStateMerger:
    """Latest ``q`` and ``qd`` of a model's independent joints, updated by name.

    Mimic joints' names are accepted and ignored (they follow their leaders).
    """

    def __init__(self, joint_names, ignored_names=(), initial_q=None):
        self.joint_names = tuple(joint_names)
        self._index = {n: i for i, n in enumerate(self.joint_names)}
        self._ignored = set(ignored_names)
        n = len(self.joint_names)
        self.q = np.zeros(n) if initial_q is None else np.array(initial_q, dtype=float)
        self.qd = np.zeros(n)
        self.received = np.zeros(n, dtype=bool)
        self._cache = {}

    @property
    def complete(self):
        """True once every joint has been heard of."""
        return bool(self.received.all())

    def _mapping(self, names):
        key = tuple(names)
        hit = self._cache.get(key)
        if hit is None:
            src = [i for i, n in enumerate(key) if n in self._index]
            dst = [self._index[key[i]] for i in src]
            unknown = [n for n in key if n not in self._index and n not in self._ignored]
            hit = (np.array(src, dtype=int), np.array(dst, dtype=int), unknown)
            if len(self._cache) > 64:
                self._cache.clear()
            self._cache[key] = hit
        return hit

    def update(self, names, positions, velocities):
        """Merge one message; returns the unknown names it held. Raises
        :class:`InvalidJointState` (and changes nothing) when the message must be dropped.
        """
        n = len(names)
        if len(positions) != n:
            raise InvalidJointState(f'{n} names but {len(positions)} positions')
        if len(velocities) not in (0, n):
            raise InvalidJointState(f'{n} names but {len(velocities)} velocities '
                                    '(expected 0 or one per name)')
        src, dst, unknown = self._mapping(names)
        if src.size == 0:
            return unknown
        pos = np.asarray(positions, dtype=float)[src]
        if not np.all(np.isfinite(pos)):
            bad = [names[i] for i in src[~np.isfinite(pos)]]
            raise InvalidJointState(f'non-finite position for {bad}')
        if len(velocities):
            vel = np.asarray(velocities, dtype=float)[src]
            if not np.all(np.isfinite(vel)):
                bad = [names[i] for i in src[~np.isfinite(vel)]]
                raise InvalidJointState(f'non-finite velocity for {bad}')
        else:
            vel = 0.0
        self.q[dst] = pos
        self.qd[dst] = vel
        self.received[dst] = True
        return unknown
