"""Merging partial joint states into the latest full state, with validation (no ROS types).

As robot_state_publisher: a message whose ``position`` and ``name`` lengths differ is dropped.
Beyond it, before any arithmetic: one that names a joint twice, or holds NaN, Inf or a magnitude
above the engine's :data:`~ros_dynamics.engine.kinematics.MAX_JOINT_VALUE` for a joint of the
model, is dropped too. ``velocity`` may be empty (zero velocity) or as long as ``name``. Names the
model does not know are ignored (reported by the caller). Joints never heard of keep their
default positions (``initial_q``) and :attr:`JointStateMerger.received` says which were heard.

Efforts are merged apart (:meth:`JointStateMerger.update_efforts`), with the same checks: a
message's bad efforts are dropped without its positions. :attr:`JointStateMerger.moving`
says which joints' velocities came from a message (not taken as zero) the last time they were
heard of, :attr:`JointStateMerger.effort_received` which joints' efforts were ever heard.
"""
import numpy as np

from ..engine.kinematics import MAX_JOINT_VALUE

#: Name lists of at most this many names have their index mapping cached.
CACHED_NAMES = 1024
#: Most name lists cached.
CACHED_LISTS = 64
#: Unknown names a message reports back at most.
REPORTED_UNKNOWN = 10


class InvalidJointState(ValueError):
    """A joint state message that must be dropped; the message says why."""


class JointStateMerger:
    """Latest ``q`` and ``qd`` of a model's independent joints, updated by name.

    Mimic joints' names are accepted and ignored (they follow their leaders). The cache of name
    lists holds at most :data:`CACHED_LISTS` lists of at most :data:`CACHED_NAMES` names.
    """

    def __init__(self, joint_names, ignored_names=(), initial_q=None):
        self.joint_names = tuple(joint_names)
        self._index = {n: i for i, n in enumerate(self.joint_names)}
        self._ignored = frozenset(ignored_names)
        n = len(self.joint_names)
        self.q = np.zeros(n) if initial_q is None else np.array(initial_q, dtype=float)
        self.qd = np.zeros(n)
        self.received = np.zeros(n, dtype=bool)
        self.moving = np.zeros(n, dtype=bool)          # velocity given when last heard of
        self.effort = np.zeros(n)
        self.effort_received = np.zeros(n, dtype=bool)
        self._cache = {}

    @property
    def complete(self):
        """True once every joint has been heard of."""
        return bool(self.received.all())

    @property
    def heard_any(self):
        """True once a joint has been heard of (or when the model has none)."""
        return bool(self.received.any()) or not self.joint_names

    def never_heard(self):
        """Names of the joints never heard of, in model order."""
        return [self.joint_names[i] for i in np.flatnonzero(~self.received)]

    def set_defaults(self, initial_q):
        """New default positions (nq,) for the joints never heard of."""
        unheard = ~self.received
        self.q[unheard] = np.asarray(initial_q, dtype=float)[unheard]

    def _mapping(self, names):
        hit = self._cache.get(names) if len(names) <= CACHED_NAMES else None
        if hit is not None:
            return hit
        if len(set(names)) != len(names):
            seen, twice = set(), []
            for n in names:
                if n in seen and len(twice) < REPORTED_UNKNOWN:
                    twice.append(n)
                seen.add(n)
            raise InvalidJointState(f'joints named more than once: {twice}')
        index, ignored = self._index, self._ignored
        src = [i for i, n in enumerate(names) if n in index]
        dst = [index[names[i]] for i in src]
        unknown = [n for n in names if n not in index and n not in ignored]
        hit = (np.array(src, dtype=int), np.array(dst, dtype=int),
               (len(unknown), unknown[:REPORTED_UNKNOWN]))
        if len(names) <= CACHED_NAMES:
            if len(self._cache) >= CACHED_LISTS:
                self._cache.clear()
            self._cache[names] = hit
        return hit

    def update(self, names, positions, velocities):
        """Merge one message; returns ``(count, first few)`` of the unknown names it held.
        Raises :class:`InvalidJointState` (and changes nothing) when it must be dropped.
        """
        n = len(names)
        if len(positions) != n:
            raise InvalidJointState(f'{n} names but {len(positions)} positions')
        if len(velocities) not in (0, n):
            raise InvalidJointState(f'{n} names but {len(velocities)} velocities '
                                    '(expected 0 or one per name)')
        src, dst, unknown = self._mapping(tuple(names))
        if src.size == 0:
            return unknown
        pos = _bounded(positions, src, names, 'position')
        vel = _bounded(velocities, src, names, 'velocity') if len(velocities) else 0.0
        self.q[dst] = pos
        self.qd[dst] = vel
        self.received[dst] = True
        self.moving[dst] = len(velocities) > 0
        return unknown

    def update_efforts(self, names, efforts):
        """Merge one message's efforts (after :meth:`update` took its positions); returns
        False when it holds none. Raises :class:`InvalidJointState` (and changes nothing) when
        they are not one per name or not finite and bounded.
        """
        if not len(efforts):
            return False
        if len(efforts) != len(names):
            raise InvalidJointState(f'{len(names)} names but {len(efforts)} efforts '
                                    '(expected 0 or one per name)')
        src, dst, _ = self._mapping(tuple(names))
        self.effort[dst] = _bounded(efforts, src, names, 'effort')
        self.effort_received[dst] = True
        return True


def _bounded(values, src, names, what):
    """``values[src]`` as floats, unless one is NaN, Inf or beyond MAX_JOINT_VALUE."""
    x = np.asarray(values, dtype=float)[src]
    ok = np.abs(x) <= MAX_JOINT_VALUE                 # False for NaN too
    if not ok.all():
        bad = [names[i] for i in src[~ok][:REPORTED_UNKNOWN]]
        raise InvalidJointState(f'{what} NaN, Inf or beyond {MAX_JOINT_VALUE:g} for {bad}')
    return x
