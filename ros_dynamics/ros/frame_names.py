"""Frame names at the node's doors: topic tokens made from them, and robot_state_publisher's
``frame_prefix`` added to frame ids sent and stripped from frame ids received.
"""
import hashlib
import re

#: Longest topic token made from a frame name (a full topic name may have 247 characters).
MAX_TOKEN = 64
_PLAIN = re.compile(r'[A-Za-z][A-Za-z0-9_]*')
_HASHED = re.compile(r'.*_h[0-9a-f]{16}')


def topic_token(frame):
    """A token of a ROS topic name standing for ``frame``, distinct for distinct frames.

    A frame name that is already a short plain token (a letter, then letters, digits and
    underscores) is used as it is; any other (``tool/0``, ``0tool``, a 300-character name, or
    one that looks like a made token) becomes its plain characters, ``_h`` and 16 hex digits of
    its SHA-1: ``tool/0`` -> ``tool_0_h...`` while ``tool_0`` stays ``tool_0``.
    """
    if len(frame) <= MAX_TOKEN and _PLAIN.fullmatch(frame) and not _HASHED.fullmatch(frame):
        return frame
    digest = hashlib.sha1(frame.encode('utf-8', 'surrogatepass')).hexdigest()[:16]
    readable = re.sub(r'[^A-Za-z0-9_]', '_', frame)[:MAX_TOKEN - 18]
    if not readable or not readable[0].isalpha():
        readable = 'f' + readable[:MAX_TOKEN - 19]
    return f'{readable}_h{digest}'


class FramePrefix:
    """robot_state_publisher's ``frame_prefix``: added to a frame id published
    (:meth:`to_frame_id`), stripped from a frame id received (:meth:`to_frame`; an id without
    the prefix is taken as it is).
    """

    def __init__(self, prefix=''):
        self.prefix = prefix

    def to_frame_id(self, frame):
        """The frame id of model frame ``frame``."""
        return self.prefix + frame

    def to_frame(self, frame_id):
        """The model frame of a received ``frame_id``."""
        prefix = self.prefix
        if prefix and frame_id.startswith(prefix):
            return frame_id[len(prefix):]
        return frame_id
