"""Hostile inputs against a running node, across processes: each is dropped, refused or
answered with an error code, counted, and a good joint state is answered after it; the process
never stops, exits 0 on SIGINT, keeps its memory and writes no log line over about 1 kB.
"""
import math
import time

import numpy as np
import pytest
from robots import DEMO_ARM
from ros_helpers import NodeProcess, rss_mb, spin_until

rclpy = pytest.importorskip('rclpy', reason='ROS 2 (rclpy) is part of make env')
from builtin_interfaces.msg import Duration  # noqa: E402
from diagnostic_msgs.msg import DiagnosticArray  # noqa: E402
from geometry_msgs.msg import WrenchStamped  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint  # noqa: E402

from ros_dynamics.engine import RobotModel  # noqa: E402
from ros_dynamics_interfaces.srv import ComputeFK, SolveIK  # noqa: E402

MODEL = RobotModel.from_urdf_file(DEMO_ARM)
NAMES = list(MODEL.joint_names)
NS = 'hostile'
Q = [0.2, -0.7, 0.9, 0.1, 0.3, 0.0]


class Harness:
    """A node process and a client that checks a good joint state is still answered."""

    def __init__(self, client, node):
        self.client, self.node = client, node
        self.torques, self.diagnostics = {}, []
        client.create_subscription(JointState, f'/{NS}/gravity_torques',
                                   lambda m: self.torques.__setitem__(m.header.stamp.sec, m), 100)
        client.create_subscription(DiagnosticArray, '/diagnostics', self.diagnostics.append, 10)
        self.states = client.create_publisher(JointState, f'/{NS}/joint_states', 100)
        self.trajectories = client.create_publisher(JointTrajectory, f'/{NS}/joint_trajectory',
                                                    10)
        self.wrenches = client.create_publisher(WrenchStamped, f'/{NS}/wrenches/tool0', 10)
        self.ik = client.create_client(SolveIK, f'/{NS}/ros_dynamics/solve_ik')
        self.fk = client.create_client(ComputeFK, f'/{NS}/ros_dynamics/compute_fk')
        self.stamp = 0
        self._watched = {}           # counter -> (value, since when unchanged)

    def good_answered(self, timeout=10.0):
        """Publish a good state with a new stamp until its torques come back; True if so."""
        self.stamp += 1
        msg = JointState(name=NAMES, position=Q)
        msg.header.stamp.sec = self.stamp
        ok = spin_until(self.client, lambda: self.stamp in self.torques, timeout,
                        lambda: self.states.publish(msg))
        if ok:
            np.testing.assert_allclose(self.torques[self.stamp].effort,
                                       MODEL.gravity_torques(np.array(Q)), atol=1e-9)
        return ok

    def call(self, service, request):
        for _ in range(4):
            future = service.call_async(request)
            if spin_until(self.client, future.done, 5.0):
                return future.result()
            service.remove_pending_request(future)
        raise AssertionError('no answer')

    def quiet_for(self, key, seconds):
        """True once the diagnostics counter ``key`` has not changed for ``seconds``."""
        value, now = self.counter(key), time.monotonic()
        if value != self._watched.get(key, (None,))[0]:
            self._watched[key] = (value, now)
        return now - self._watched[key][1] >= seconds

    def counter(self, key):
        values = [{kv.key: kv.value for kv in s.values} for d in self.diagnostics
                  for s in d.status if s.name == f'/{NS}/ros_dynamics: dynamics']
        return int(values[-1][key]) if values else 0


@pytest.fixture(scope='module')
def harness(tmp_path_factory):
    rclpy.init()
    client = rclpy.create_node('hostile_client')
    log = tmp_path_factory.mktemp('hostile') / 'node.log'
    node = NodeProcess('dynamics_node', '-r', f'__ns:=/{NS}', '-p', f'urdf_file:={DEMO_ARM}',
                       '-p', 'trajectory.max_points:=1000', '-p', 'ik.seed_samples:=0',
                       log_path=str(log))
    h = Harness(client, node)
    assert h.ik.wait_for_service(timeout_sec=20.0), node.output()
    assert h.good_answered(20.0), node.output()
    yield h
    assert node.proc.poll() is None, node.output()           # never stopped
    code = node.stop()
    client.destroy_node()
    rclpy.shutdown()
    assert code == 0, node.output()
    assert max(len(line) for line in node.output().splitlines()) < 1100


def state(**changes):
    msg = JointState(name=list(NAMES), position=list(Q))
    for key, value in changes.items():
        setattr(msg, key, value)
    msg.header.stamp.sec = 5000
    return msg


@pytest.mark.parametrize('msg', [
    state(position=[1e300] + Q[1:]),
    state(position=[math.nan] + Q[1:]),
    state(velocity=[1e101] + [0.0] * 5),
    state(velocity=[-math.inf] + [0.0] * 5),
    state(name=NAMES[:5] + [NAMES[0]]),
    state(position=Q[:5]),
], ids=['position 1e300', 'NaN', 'velocity 1e101', 'velocity -Inf', 'named twice', 'short'])
def test_bad_joint_states_are_dropped_never_answered(harness, msg):
    for _ in range(3):
        harness.states.publish(msg)
    assert harness.good_answered()
    assert 5000 not in harness.torques


def trajectory(times, positions, velocities=None):
    msg = JointTrajectory(joint_names=NAMES[:1])
    for k, (t, p) in enumerate(zip(times, positions)):
        point = JointTrajectoryPoint(positions=[p], time_from_start=Duration(
            sec=int(t), nanosec=int(round((t % 1) * 1e9))))
        if velocities is not None:
            point.velocities = [velocities[k]]
        msg.points.append(point)
    return msg


@pytest.mark.parametrize('msg', [
    trajectory([0.0, 1.0], [0.0, 1e101]),
    trajectory([0.0, 1e-9], [0.0, 1e99]),
    trajectory([0.0, 1e-9], [0.0, 1e95], [0.0, 0.0]),
    trajectory(np.arange(1001) * 0.01, np.zeros(1001)),
    trajectory([0.0, 1.0], [0.0, math.inf]),
], ids=['value 1e101', '1 ns velocity', '1 ns acceleration', '1001 points', 'Inf'])
def test_hostile_trajectories_are_rejected(harness, msg):
    before = harness.counter('trajectories_rejected')
    harness.trajectories.publish(msg)
    assert harness.good_answered()
    assert spin_until(harness.client, lambda: harness.counter('trajectories_rejected') > before,
                      5.0, lambda: harness.good_answered(1.0))


@pytest.mark.parametrize('force, frame', [(1e308, ''), (math.nan, ''), (1.0, 'nowhere'),
                                          (1e101, 'tool0')])
def test_hostile_wrenches_are_rejected(harness, force, frame):
    msg = WrenchStamped()
    msg.header.frame_id = frame
    msg.wrench.force.z = force
    before = harness.counter('wrenches_rejected')
    harness.wrenches.publish(msg)
    assert harness.good_answered()                     # torques unchanged (checked inside)
    assert spin_until(harness.client, lambda: harness.counter('wrenches_rejected') > before,
                      5.0, lambda: harness.good_answered(1.0))


def ik_request(**fields):
    req = SolveIK.Request()
    req.target.pose.position.x, req.target.pose.position.z = 0.4, 0.3
    req.target.pose.orientation.w = 1.0
    for key, value in fields.items():
        target, _, name = key.rpartition('__')
        setattr(eval('req.' + target.replace('__', '.')) if target else req, name, value)
    return req


@pytest.mark.parametrize('fields, code', [
    (dict(target__pose__orientation__x=1e200), SolveIK.Response.INVALID_REQUEST),
    (dict(target__pose__position__x=math.inf), SolveIK.Response.INVALID_REQUEST),
    (dict(position_tolerance=1e308), SolveIK.Response.INVALID_REQUEST),
    (dict(orientation_tolerance=math.nan), SolveIK.Response.INVALID_REQUEST),
    (dict(timeout=Duration(sec=1_000_000_000)), SolveIK.Response.INVALID_REQUEST),
    (dict(active_joints=['ghost']), SolveIK.Response.INVALID_GROUP_NAME),
    (dict(seed=JointState(name=NAMES[:1], position=[1e101])),
     SolveIK.Response.INVALID_ROBOT_STATE),
    (dict(tip_frame='x' * 100_000), SolveIK.Response.INVALID_LINK_NAME),
], ids=['quaternion 1e200', 'Inf', 'tolerance 1e308', 'tolerance NaN', 'timeout 1e9 s',
        'unknown joint group', 'seed 1e101', 'huge tip name'])
def test_hostile_ik_requests_get_error_codes(harness, fields, code):
    res = harness.call(harness.ik, ik_request(**fields))
    assert res.error_code == code and not res.success, res.message
    assert len(res.message) <= 1000
    assert harness.good_answered()


@pytest.mark.parametrize('state_, frames, code', [
    (JointState(name=NAMES[:1], position=[1e101]), [], ComputeFK.Response.INVALID_ROBOT_STATE),
    (JointState(name=NAMES[:1], position=[math.nan]), [], ComputeFK.Response.INVALID_ROBOT_STATE),
    (JointState(name=NAMES[:1] * 2, position=[0.0, 1.0]), [],
     ComputeFK.Response.INVALID_ROBOT_STATE),
    (JointState(), ['tool0'] * 20_000, ComputeFK.Response.INVALID_REQUEST),
])
def test_hostile_fk_requests_get_error_codes(harness, state_, frames, code):
    res = harness.call(harness.fk, ComputeFK.Request(state=state_, frames=frames))
    assert res.error_code == code, res.message
    assert harness.good_answered()


def test_floods_of_unknown_names_keep_memory_and_log_lines_bounded(harness):
    """Joint states of 10^5 and 3 x 10^5 unknown names (a million-name state, checked by hand,
    is lost on its best-effort way so often that a test would mostly wait): memory back within
    10 % (it is not without the Fast DDS profile and the system allocator: 120 -> 138 MB).
    """
    pid = harness.node.proc.pid
    for _ in range(3):                                 # warm up: allocator and queues settle
        assert harness.good_answered()
    before = rss_mb(pid)
    for burst, size in enumerate([100_000] * 3 + [300_000]):
        names = [f'ghost_{burst}_{i}' for i in range(size)] + NAMES
        msg = JointState(name=names, position=[0.0] * size + Q)
        msg.header.stamp.sec = 9000 + burst
        # Best effort: a message of several MB is often lost on the way; sent until answered.
        for _ in range(100):
            harness.states.publish(msg)
            if spin_until(harness.client, lambda b=burst: 9000 + b in harness.torques, 0.3):
                break
        assert 9000 + burst in harness.torques, burst
    # Copies still queued take the node about a second per million names.
    assert harness.good_answered(60.0)
    spin_until(harness.client, lambda: False, 1.5)    # the 1 Hz tick gives memory back
    for _ in range(3):
        assert harness.good_answered()
    after = rss_mb(pid)
    print(f"node RSS before the flood {before:.0f} MB, after {after:.0f} MB")
    assert after <= 1.1 * before, (before, after)
    # The middleware's readers free what they received (ros/fastdds_profile.xml, parsed cleanly).
    assert 'Fast DDS readers free each sample once taken' in harness.node.output()
    assert 'XMLPARSER' not in harness.node.output()
    assert 'joint states name joints the model does not have' in harness.node.output()


def test_huge_trajectories_and_requests_give_their_memory_back(harness):
    """Millions of small objects (points, frame names, joint names) built and dropped by the
    node: its memory is back within 10 % once they are refused.
    """
    pid = harness.node.proc.pid
    assert harness.good_answered()
    spin_until(harness.client, lambda: False, 1.5)
    before = {kind: rss_mb(pid, kind) for kind in ('VmRSS', 'RssAnon', 'RssShmem')}
    rejected = harness.counter('trajectories_rejected')
    huge = trajectory(np.arange(300_000) * 0.001, np.zeros(300_000))
    for _ in range(20):            # best effort on the way: sent until counted
        harness.trajectories.publish(huge)
        if spin_until(harness.client, lambda: harness.counter('trajectories_rejected') > rejected,
                      3.0):
            break
    assert harness.counter('trajectories_rejected') > rejected
    del huge
    res = harness.call(harness.fk, ComputeFK.Request(frames=[f'f{i}' for i in range(1_000_000)]))
    assert res.error_code == ComputeFK.Response.INVALID_REQUEST
    request = SolveIK.Request(active_joints=[f'j{i}' for i in range(1_000_000)])
    request.target.pose.orientation.w = 1.0
    assert harness.call(harness.ik, request).error_code == SolveIK.Response.INVALID_GROUP_NAME
    # Copies of the trajectory still on their way are read (and rejected) before measuring.
    settled = spin_until(harness.client, lambda: harness.quiet_for('trajectories_rejected', 3.0),
                         60.0)
    assert settled and harness.good_answered()
    # The 1 Hz tick gives memory back: a few ticks at most (one CI run under the apt versions
    # measured 145 MB against 129 after 2.5 s).
    spin_until(harness.client, lambda: rss_mb(pid, 'VmRSS') <= 1.1 * before['VmRSS'], 10.0)
    assert harness.good_answered()
    after = {kind: rss_mb(pid, kind) for kind in ('VmRSS', 'RssAnon', 'RssShmem')}
    print(f"node memory [MB] before the huge inputs {before}, after {after}")
    assert after['VmRSS'] <= 1.1 * before['VmRSS'], (before, after)
