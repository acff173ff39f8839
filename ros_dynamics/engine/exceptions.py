"""Typed errors and warnings of the engine.

Every error the engine raises on bad input derives from :class:`DynamicsError`, so a caller can
catch one base class. The subclasses also derive from the matching built-in (``ValueError``,
``LookupError``) so generic handlers keep working. Messages say what was expected and what came,
and name the joint, link or frame at fault.
"""


class DynamicsError(Exception):
    """Base class of every error raised by the engine."""


class UrdfError(DynamicsError, ValueError):
    """A robot description is malformed or is not a valid kinematic tree."""


class ModelError(DynamicsError, ValueError):
    """A model cannot be built or changed as asked (e.g. a bad DH row or payload)."""


class InertiaError(ModelError):
    """An inertial is physically impossible (raised in strict mode, else a warning)."""


class ShapeError(DynamicsError, ValueError):
    """An array argument has the wrong shape, e.g. ``q: expected 7 values, got 6``."""


class InvalidInputError(DynamicsError, ValueError):
    """An argument holds a value outside its domain: NaN, Inf, a zero quaternion, ..."""


class InsufficientExcitationError(DynamicsError, ValueError):
    """Recorded data do not determine what is to be identified (e.g. a payload's mass and
    center of mass from a motion that barely moves it); the message says what was lacking.
    """


class UnknownNameError(DynamicsError, LookupError):
    """A frame or joint name is not in the model; the message lists the valid names."""

    def __init__(self, kind, name, valid):
        self.kind = kind
        self.name = name
        self.valid = list(valid)
        shown = ', '.join(self.valid[:40]) + (', ...' if len(self.valid) > 40 else '')
        super().__init__(f'unknown {kind} {name!r}; valid {kind}s: [{shown}]')

    def __str__(self):
        # LookupError would quote the message like a key; show it as written.
        return self.args[0]


class UnknownFrameError(UnknownNameError):
    """A frame (link) name is not in the model."""

    def __init__(self, name, valid):
        super().__init__('frame', name, valid)


class UnknownJointError(UnknownNameError):
    """A joint name is not in the model."""

    def __init__(self, name, valid):
        super().__init__('joint', name, valid)


class MeshError(DynamicsError, ValueError):
    """A mesh cannot be read or is not a closed, consistently oriented surface."""


class InertiaWarning(UserWarning):
    """A robot description holds physically impossible or suspicious inertials."""


class StanceError(DynamicsError, ValueError):
    """Contacts cannot hold a floating-base robot still: no contact forces allowed (inside
    the friction cones, when asked) balance its weight on the base.
    """
