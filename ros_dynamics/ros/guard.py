"""No callback lets an exception out: :func:`guarded` wraps a subscription, service, timer,
guard-condition or parameter callback so that an unexpected exception becomes one throttled
error line naming the callback and the cause, one more ``callback_errors`` in the diagnostics,
and the input dropped (a service answers with a fallback response); the node keeps serving.

``MemoryError`` and ``RecursionError`` are caught the same way (the input that caused them is
dropped); ``KeyboardInterrupt`` and ``SystemExit`` are not exceptions to survive and pass.
"""
import functools


def guarded(callback, what, log, diagnostics, fallback=None):
    """``callback`` wrapped: an exception is logged through ``log`` (a
    :class:`~ros_dynamics.ros.throttled_log.ThrottledLog`) as ``<what>: <type>: <message>``,
    counted in ``diagnostics`` and answered with ``fallback(*args, error)`` (or None).
    """
    @functools.wraps(callback)
    def wrapper(*args):
        try:
            return callback(*args)
        except Exception as error:          # the point of the guard
            diagnostics.count('callback_errors')
            log.error(f'{what}: unexpected {type(error).__name__}: {error}; input dropped, '
                      'the node keeps serving', cause=f'{what}:{type(error).__name__}')
            if fallback is None:
                return None
            return fallback(*args, error)
    return wrapper
