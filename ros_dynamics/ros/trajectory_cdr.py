"""trajectory_msgs/JointTrajectory read from and written to its serialised form (CDR, as the
middleware carries it), in Python code that shares the interpreter.

rclpy turns a received message into Python objects, and a message to publish into bytes, in one
call of its C extension that holds the interpreter lock throughout: about 2 s for a 10^5-point
trajectory, during which no other thread of the node runs -- the joint states included. The
dynamics node therefore subscribes to ``joint_trajectory`` raw and reads it here, on its
trajectory thread (:mod:`.newest_worker`), where the lock passes to the streaming path every few
milliseconds; it writes ``feedforward_trajectory`` here too.

Layout (OMG XCDR1, little endian, as Fast DDS and Cyclone DDS serialise ROS 2 messages): a
4-byte encapsulation header, then the fields in order, each aligned to its size from the end of
that header; a string is a uint32 length (with its terminating NUL) and the bytes; a sequence
a uint32 count and its elements.
"""
from collections import namedtuple
import struct

from builtin_interfaces.msg import Time
import numpy as np

from .trajectory_feedforward import InvalidTrajectory, check_header, empty_data, put_point

#: The little-endian CDR encapsulation header (big-endian data is refused).
_HEADER = b'\x00\x01\x00\x00'

#: What the node needs of a received trajectory: its header stamp (builtin_interfaces Time), its
#: frame id and its numbers (:class:`~ros_dynamics.ros.trajectory_feedforward.TrajectoryData`).
Received = namedtuple('Received', 'stamp frame_id data')


class MalformedMessage(ValueError):
    """Bytes that are not a little-endian CDR JointTrajectory."""


class _Reader:
    def __init__(self, data):
        if bytes(data[:2]) != _HEADER[:2]:
            raise MalformedMessage('not little-endian CDR')
        self.data, self.pos = memoryview(data), 4

    def _align(self, size):
        self.pos += -(self.pos - 4) % size

    def _need(self, size):
        if self.pos + size > len(self.data):
            raise MalformedMessage(f'truncated at byte {self.pos}')

    def int32(self, fmt='<i'):
        self._align(4)
        self._need(4)
        value = struct.unpack_from(fmt, self.data, self.pos)[0]
        self.pos += 4
        return value

    def string(self):
        n = self.int32('<I')
        self._need(n)
        text = bytes(self.data[self.pos:self.pos + max(n - 1, 0)]).decode('utf-8', 'replace')
        self.pos += n
        return text

    def doubles(self):
        n = self.int32('<I')
        if not n:
            return _EMPTY
        self._align(8)
        self._need(8 * n)
        values = np.frombuffer(self.data, '<f8', n, self.pos)
        self.pos += 8 * n
        return values


_EMPTY = np.zeros(0)


def read_trajectory(data, known_joints, max_points, max_joints):
    """A :data:`Received` from the serialised bytes ``data``: the counts checked before
    anything is read for them (the sizes are the sender's to choose), each point's arrays'
    lengths as they are read (:func:`~ros_dynamics.ros.trajectory_feedforward.put_point`).
    Raises InvalidTrajectory, or :class:`MalformedMessage` for bytes that end early.
    """
    r = _Reader(data)
    stamp = Time(sec=r.int32(), nanosec=r.int32('<I'))
    frame_id = r.string()
    count = r.int32('<I')
    if count > max_joints:                   # before reading that many names
        raise InvalidTrajectory(f'{count} joints, more than trajectory.max_joints '
                                f'({max_joints})')
    names = [r.string() for _ in range(count)]
    count = r.int32('<I')
    check_header(names, count, known_joints, max_points, max_joints)
    if count * 24 > len(data):               # four counts and a Duration a point at least
        raise MalformedMessage(f'{count} points in {len(data)} bytes')
    out = empty_data(names, count)
    for i in range(count):
        positions, velocities, accelerations, _ = r.doubles(), r.doubles(), r.doubles(), \
            r.doubles()
        put_point(out, i, positions, velocities, accelerations, r.int32(), r.int32('<I'))
    return Received(stamp, frame_id, out)


def write_trajectory(received, efforts):
    """The serialised JointTrajectory of ``received`` (a :data:`Received`) with the efforts
    ``efforts`` (N, n) at its points, their other arrays as they came.
    """
    out, chunks = [_HEADER], []
    size = [0]                     # bytes after the encapsulation header

    def put(raw, align=1):
        pad = -size[0] % align
        if pad:
            out.append(b'\0' * pad)
        out.append(raw)
        size[0] += pad + len(raw)

    def put_string(text):
        raw = text.encode('utf-8') + b'\0'
        put(struct.pack('<I', len(raw)), 4)
        put(raw)

    def put_doubles(values):
        put(struct.pack('<I', len(values)), 4)
        if len(values):
            put(np.ascontiguousarray(values, '<f8').tobytes(), 8)

    data = received.data
    put(struct.pack('<iI', received.stamp.sec, received.stamp.nanosec), 4)
    put_string(received.frame_id)
    put(struct.pack('<I', len(data.joint_names)), 4)
    for name in data.joint_names:
        put_string(name)
    put(struct.pack('<I', len(data.times)), 4)
    for i, effort in enumerate(efforts):
        if i % 1024 == 1023:       # joined as it goes: one join of every piece holds the lock
            chunks.append(b''.join(out))
            out.clear()
        put_doubles(data.positions[i])
        put_doubles(data.velocities[i] if data.has_velocities[i] else _EMPTY)
        put_doubles(data.accelerations[i] if data.has_accelerations[i] else _EMPTY)
        put_doubles(effort)
        put(struct.pack('<iI', *data.stamps[i].tolist()), 4)
    chunks.append(b''.join(out))
    return b''.join(chunks)
