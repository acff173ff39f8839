"""The node's effort outputs across processes: this process plays the robot.

The UR5 of example-robot-data is simulated at 1 kHz with the engine's forward dynamics
(test/simulation.py: a controller tracking sums of sines, encoder positions, drive velocities
and efforts with noise), and its joint states -- with velocities and efforts, stamped with the
simulated time -- are published to a node in another process as fast as it answers (faster
than real time). The pushes and payloads are known, so ``external_torques``,
``wrench_estimates/tool0``, ``collision`` and ``~/identify_payload`` are checked against the
truth.
"""
import numpy as np
import pytest
from robots import DEMO_ARM, UR5, erd, load
from ros_helpers import NodeProcess, spin_until
from simulation import (
    UR5_WORKING_POSTURE,
    exciting_motion,
    payload_recording,
    simulate,
    tool_push_recording,
)

rclpy = pytest.importorskip('rclpy', reason='ROS 2 (rclpy) is part of make env')
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus  # noqa: E402
from geometry_msgs.msg import WrenchStamped  # noqa: E402
from rcl_interfaces.msg import Parameter, ParameterType, ParameterValue  # noqa: E402
from rcl_interfaces.srv import SetParametersAtomically  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from std_msgs.msg import Bool, String  # noqa: E402

from ros_dynamics.engine import Payload, collision_thresholds  # noqa: E402
from ros_dynamics.engine.observers import observe  # noqa: E402
from ros_dynamics.ros.effort_monitor import COLLISION_QOS  # noqa: E402

srv = pytest.importorskip('ros_dynamics_interfaces.srv', reason='built by make env')
IdentifyPayload = srv.IdentifyPayload

NS = 'effort'
GAIN = 50.0


@pytest.fixture(scope='module')
def ur5():
    return load(erd(UR5))


class Robot:
    """The robot, played by this process: publishes joint states, keeps what the node answers."""

    def __init__(self, client):
        self.client = client
        self.pub = client.create_publisher(JointState, f'/{NS}/joint_states', 1000)
        self.acked = -1                        # stamp [ns] of the latest gravity_torques
        self.torques, self.wrenches, self.collisions, self.diagnostics = {}, {}, [], []
        client.create_subscription(JointState, f'/{NS}/gravity_torques', self._ack, 1000)
        client.create_subscription(
            JointState, f'/{NS}/external_torques',
            lambda m: self.torques.__setitem__(_ns(m.header.stamp), np.array(m.effort)), 1000)
        client.create_subscription(WrenchStamped, f'/{NS}/wrench_estimates/tool0',
                                   lambda m: self.wrenches.__setitem__(_ns(m.header.stamp), m),
                                   1000)
        client.create_subscription(Bool, f'/{NS}/collision',
                                   lambda m: self.collisions.append((self.acked, m.data)),
                                   COLLISION_QOS)
        client.create_subscription(DiagnosticArray, '/diagnostics',
                                   lambda m: self.diagnostics.extend(
                                       s for s in m.status if s.name.startswith(f'/{NS}/')), 10)
        self.gravity = {}

    def _ack(self, msg):
        self.acked = max(self.acked, _ns(msg.header.stamp))
        self.gravity[_ns(msg.header.stamp)] = np.array(msg.effort)

    def play(self, names, recording, t0, burst=20, efforts=True, first=0, stop=None):
        """Publish the recording's measured joint states ``first:stop``, stamped ``t0 + t`` [s],
        ``burst`` at a time, each burst once the node answered the previous one; returns the
        stamps [ns] of the whole recording.
        """
        stamps = np.round((t0 + recording.t) * 1e9).astype(np.int64)
        stop = stamps.size if stop is None else stop
        for start in range(first, stop, burst):
            for k in range(start, min(start + burst, stop)):
                msg = JointState(name=names, position=recording.q_measured[k].tolist(),
                                 velocity=recording.v_measured[k].tolist(),
                                 effort=recording.tau_measured[k].tolist() if efforts else [])
                msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(int(stamps[k]), 10**9)
                self.pub.publish(msg)
            last = int(stamps[min(start + burst, stop) - 1])
            assert spin_until(self.client, lambda last=last: self.acked >= last, 10.0), start
        spin_until(self.client, lambda: False, 0.1)          # the last messages of other topics
        return stamps


def _ns(stamp):
    return stamp.sec * 10**9 + stamp.nanosec


def _value(value):
    v = ParameterValue()
    if isinstance(value, bool):
        v.type, v.bool_value = ParameterType.PARAMETER_BOOL, value
    elif isinstance(value, str):
        v.type, v.string_value = ParameterType.PARAMETER_STRING, value
    elif isinstance(value, (list, tuple)) and value and isinstance(value[0], str):
        v.type, v.string_array_value = ParameterType.PARAMETER_STRING_ARRAY, list(value)
    elif isinstance(value, (list, tuple)):
        v.type, v.double_array_value = ParameterType.PARAMETER_DOUBLE_ARRAY, \
            [float(x) for x in value]
    else:
        v.type, v.double_value = ParameterType.PARAMETER_DOUBLE, float(value)
    return v


def set_parameters(client, service, values):
    """Set ``values`` in one atomic change (the pairs joints/values must change together)."""
    request = SetParametersAtomically.Request(parameters=[Parameter(name=k, value=_value(v))
                                                          for k, v in values.items()])
    future = service.call_async(request)
    assert spin_until(client, future.done, 10.0)
    return [future.result().result]


@pytest.fixture(scope='module')
def ros(tmp_path_factory, ur5):
    rclpy.init()
    client = rclpy.create_node('effort_robot')
    log = tmp_path_factory.mktemp('efforts') / 'node.log'
    node = NodeProcess('dynamics_node', '-r', f'__ns:=/{NS}', '-p', f'urdf_file:={erd(UR5)}',
                       '-p', 'tip_frames:=[tool0]', '-p', f'observer.gain:={GAIN}',
                       '-p', 'publish.poses:=false', '-p', 'publish.twists:=false',
                       '-p', 'publish.jacobians:=false', '-p', 'publish.markers:=false',
                       '-p', 'diagnostics.quiet_period:=2.0', log_path=str(log))
    robot = Robot(client)
    params = client.create_client(SetParametersAtomically,
                                  f'/{NS}/ros_dynamics/set_parameters_atomically')
    identify = client.create_client(IdentifyPayload, f'/{NS}/ros_dynamics/identify_payload')
    assert params.wait_for_service(timeout_sec=20.0), node.output()
    assert identify.wait_for_service(timeout_sec=20.0), node.output()
    yield robot, params, identify, node
    code = node.stop()
    client.destroy_node()
    rclpy.shutdown()
    assert code == 0, node.output()


def test_known_wrench_at_the_tool_is_estimated_within_five_time_constants(ros, ur5):
    robot, _, _, node = ros
    wrench, t_push, recording = tool_push_recording(ur5)          # on the robot, world axes
    t0 = 100.0
    stamps = robot.play(list(ur5.joint_names), recording, t0)
    k = int(round((t_push + 5 / GAIN) * 1e3))
    assert stamps[k] in robot.wrenches, node.output()[-2000:]
    msg = robot.wrenches[stamps[k]]
    assert msg.header.frame_id == ur5.root_link
    f, tq = msg.wrench.force, msg.wrench.torque
    force, torque = np.array([f.x, f.y, f.z]), np.array([tq.x, tq.y, tq.z])
    error = np.linalg.norm(force - wrench[:3]) / np.linalg.norm(wrench[:3])
    angle = np.degrees(np.arccos(min(1.0, force @ wrench[:3] / np.linalg.norm(force)
                                     / np.linalg.norm(wrench[:3]))))
    print(f'wrench estimate 5 time constants after the push: force error {100 * error:.2f} %, '
          f'direction {angle:.2f} deg, torque error {np.linalg.norm(torque - wrench[3:]):.3f} N m')
    assert error < 0.05 and angle < 5.0
    # External torques: those of the wrench, as the engine's observer estimates them.
    expected = observe(ur5, GAIN, recording.q_measured, recording.v_measured,
                       recording.tau_measured, recording.t)
    got = np.array([robot.torques[s] for s in stamps])
    np.testing.assert_allclose(got, expected, atol=1e-6)
    true_tau = ur5.wrench_torques(recording.q[k], 'tool0', wrench)
    assert np.max(np.abs(got[k] - true_tau)) < 0.05 * np.max(np.abs(true_tau))


def test_collision_within_50_ms_of_a_20_newton_push_and_none_in_free_motion(ros, ur5):
    robot, params, _, node = ros
    names = list(ur5.joint_names)

    def run(seed, duration, push=None):
        rng = np.random.default_rng(seed)
        motion = exciting_motion(ur5, rng, speed=1.0, duration=duration)
        return simulate(ur5, ur5, motion, duration, rng, push=push)

    calibration = run(30, 2.0)
    thresholds = collision_thresholds(observe(ur5, GAIN, calibration.q_measured,
                                              calibration.v_measured, calibration.tau_measured,
                                              calibration.t), margin=2.0)
    results = set_parameters(robot.client, params, {
        'collision.thresholds.joints': names,
        'collision.thresholds.values': thresholds.tolist()})
    assert all(r.successful for r in results), [r.reason for r in results]
    # Free motion at full speed: no flag.
    free = run(31, 2.0)
    assert np.max(np.abs(free.v) / ur5.velocity_limits) > 0.95
    robot.collisions.clear()
    stamps = robot.play(names, free, 200.0)
    peak = np.max(np.abs([robot.torques[s] for s in stamps[100:]]) / thresholds)
    print(f'free motion at full speed: external torques peak at {100 * peak:.0f} % of the '
          f'thresholds, collision messages {robot.collisions}')
    assert not any(on for _, on in robot.collisions)
    # A 20 N push on the wrist mid-motion: flagged within 50 ms, then released.
    t_push, wrench = 1.0, np.array([0, 20.0, 0, 0, 0, 0])
    pushed = run(32, 1.2, push=lambda t: {'wrist_3_link': wrench} if t >= t_push else None)
    stamps = robot.play(names, pushed, 300.0, burst=1)
    flagged = [acked for acked, on in robot.collisions if on]
    assert flagged, node.output()[-2000:]
    over = [s for s in stamps if np.any(np.abs(robot.torques[s]) > thresholds)]
    latency = (over[0] * 1e-9 - 300.0) - t_push
    # The signal arrived while the node answered that joint state (lock step).
    assert flagged[0] <= over[0] + 2_000_000 and flagged[0] >= stamps[int(t_push * 1e3)] - 1
    print(f'collision flagged {1e3 * latency:.0f} ms after the 20 N push starts')
    assert 0 <= latency <= 0.050
    assert spin_until(robot.client, lambda: any(
        s.level == DiagnosticStatus.ERROR and 'collision' in s.message
        for s in robot.diagnostics), 3.0)
    status = [s for s in robot.diagnostics if s.level == DiagnosticStatus.ERROR][-1]
    assert 'wrist' in status.message or 'shoulder' in status.message or 'elbow' in status.message
    values = {kv.key: kv.value for kv in status.values}
    assert int(values['collisions']) >= 1
    # Free again: the signal goes back to False, the status to OK after the quiet period.
    robot.play(names, free, 400.0, burst=50)
    assert robot.collisions[-1][1] is False
    robot.diagnostics.clear()
    assert spin_until(robot.client, lambda: any(
        s.level == DiagnosticStatus.OK for s in robot.diagnostics), 6.0), \
        [(s.level, s.message) for s in robot.diagnostics]


def test_identify_payload_from_ten_seconds_of_motion_and_apply_it(ros, ur5):
    """The plant carries a payload the node does not know; ``~/identify_payload`` records 10 s
    of the motion, fits and applies it while the joint states keep flowing: the estimate is
    within 2 % in mass and 5 mm in center of mass, the gravity torques include it, and the
    settings swap is not mistaken for a collision (the external torques stay continuous).
    """
    robot, params, identify, node = ros
    truth, recording = payload_recording(2.0, (0.04, -0.03, 0.09), 110, duration=12.0)
    names = list(ur5.joint_names)
    assert all(r.successful for r in set_parameters(robot.client, params, {
        'collision.threshold': 1000.0, 'collision.thresholds.joints': [''],
        'collision.thresholds.values': [0.0]}))
    request = IdentifyPayload.Request(frame='tool0', apply=True)
    request.duration.sec = 10
    future = identify.call_async(request)
    spin_until(robot.client, lambda: False, 0.2)
    busy = identify.call_async(request)           # a second request meanwhile: refused
    assert spin_until(robot.client, busy.done, 5.0)
    assert busy.result().error_code == IdentifyPayload.Response.BUSY
    t0 = 500.0
    # 10.5 s of states, then a pause until the fit is applied (on a loaded machine it may take
    # longer than the node takes to answer the rest of the stream), then the rest.
    split = int(np.searchsorted(recording.t, 10.5))
    stamps = robot.play(names, recording, t0, burst=50, stop=split)
    assert spin_until(robot.client, future.done, 30.0), node.output()[-2000:]
    robot.play(names, recording, t0, burst=50, first=split)
    answer = future.result()
    print(f'identified {answer.inertia.m:.4f} kg (true {truth.mass}), center of mass error '
          f'{1e3 * np.linalg.norm([answer.inertia.com.x - truth.com[0], answer.inertia.com.y - truth.com[1], answer.inertia.com.z - truth.com[2]]):.2f} mm, '  # noqa: E501
          f'condition number {answer.condition_number:.2f}: {answer.message}')
    assert answer.success and answer.applied, answer.message
    assert abs(answer.inertia.m - truth.mass) < 0.02 * truth.mass
    com = np.array([answer.inertia.com.x, answer.inertia.com.y, answer.inertia.com.z])
    assert np.linalg.norm(com - truth.com) < 0.005
    assert answer.samples > 9900 and answer.recorded_duration >= 10.0
    assert answer.frame == 'tool0' and list(answer.joint_names) == names
    # Applied as the payload.* parameters: the gravity torques of the last states include it.
    fitted = load(erd(UR5))
    i = answer.inertia
    fitted.update_settings(payloads=[Payload('tool0', i.m, com, [[i.ixx, i.ixy, i.ixz],
                                                                 [i.ixy, i.iyy, i.iyz],
                                                                 [i.ixz, i.iyz, i.izz]])])
    last = stamps[-1]
    np.testing.assert_allclose(robot.gravity[last],
                               fitted.gravity_torques(recording.q_measured[-1]), atol=1e-6)
    plant = load(erd(UR5))
    plant.update_settings(payloads=[truth])
    true_g = plant.gravity_torques(recording.q_measured[-1])
    assert np.max(np.abs(robot.gravity[last] - true_g)) < 0.01 * np.max(np.abs(true_g))
    # The swap happened mid-stream (about 10 s in): the external torques carry on across it
    # (a settings change mistaken for a blow would jump by Delta M v / dt, tens of N m).
    g = np.array([robot.gravity[s] for s in stamps])
    swap = int(np.argmax(np.any(np.abs(g - ur5.gravity_torques(recording.q_measured)) > 1e-6,
                                axis=1)))
    assert 9000 < swap < stamps.size - 100
    torques = np.array([robot.torques[s] for s in stamps])
    steps = np.max(np.abs(np.diff(torques, axis=0)), axis=1)
    before = np.max(steps[swap - 200:swap - 2])
    print(f'payload applied {swap} ms into the stream; external torques step by '
          f'{np.max(steps[swap - 2:swap + 2]):.3f} N m there, at most {before:.3f} N m per '
          'step in the 200 ms before')
    assert np.max(steps[swap - 2:swap + 2]) < 2 * before + 0.1
    assert not any(on for _, on in robot.collisions[-1:])


def test_hostile_efforts_stamps_and_identify_requests(ros, ur5):
    """Bad efforts are dropped (positions still served), stamps going backwards or jumping
    reset the observer (counted), absurd identify requests are refused with their code.
    """
    robot, params, identify, node = ros
    names = list(ur5.joint_names)
    q = np.array(UR5_WORKING_POSTURE)
    g = ur5.gravity_torques(q)
    stamp = [700.0]

    def send(effort, dt=1e-3, velocity=(0.0,) * 6, names=names, position=None):
        stamp[0] += dt
        msg = JointState(name=names, position=list(q if position is None else position),
                         velocity=list(velocity), effort=list(effort))
        msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(int(round(stamp[0] * 1e9)),
                                                                10**9)
        robot.pub.publish(msg)
        return _ns(msg.header.stamp)

    def answered(s):
        assert spin_until(robot.client, lambda: robot.acked >= s, 5.0)
        spin_until(robot.client, lambda: False, 0.05)

    for _ in range(20):
        answered(send(g))
    for bad in ([float('nan')] + [0.0] * 5, [1e300] * 6, [0.0] * 5, [float('inf')] * 6):
        s = send(bad)
        answered(s)                                  # gravity torques still answered ...
        assert s not in robot.torques                # ... the observer did not take it
    s = send(g, velocity=())                         # no velocities: the observer waits
    answered(s)
    assert s not in robot.torques
    s = send(())                                     # no efforts: nothing for the observer
    answered(s)
    assert s not in robot.torques
    for dt in (-0.5, 0.0, 5.0):                      # backwards, repeated, a gap: reset
        s = send(g, dt=dt)
        answered(s)
        np.testing.assert_array_equal(robot.torques[s], np.zeros(6))
    answered(send(g))
    codes = IdentifyPayload.Response
    for frame, sec, nanosec, code in (('tool0', 0, 0, codes.INVALID_REQUEST),
                                      ('tool0', -3, 0, codes.INVALID_REQUEST),
                                      ('tool0', 10**6, 0, codes.INVALID_REQUEST),
                                      ('tool0', 1, 2 * 10**9, codes.INVALID_REQUEST),
                                      ('nowhere', 1, 0, codes.INVALID_LINK_NAME),
                                      ('world', 1, 0, codes.INVALID_LINK_NAME)):
        request = IdentifyPayload.Request(frame=frame)
        request.duration.sec, request.duration.nanosec = sec, nanosec
        future = identify.call_async(request)
        assert spin_until(robot.client, future.done, 5.0)
        assert future.result().error_code == code, future.result().message
    # A recording cut short by a stamp going backwards; one without joint states: NO_DATA.
    request = IdentifyPayload.Request(frame='tool0')
    request.duration.sec = 1
    future = identify.call_async(request)
    spin_until(robot.client, lambda: False, 0.3)
    for _ in range(30):
        answered(send(g))
    answered(send(g, dt=-1.0))
    assert spin_until(robot.client, future.done, 5.0)
    assert future.result().error_code == codes.INTERRUPTED, future.result().message
    assert 'backwards' in future.result().message
    future = identify.call_async(request)
    assert spin_until(robot.client, future.done, 8.0)
    assert future.result().error_code == codes.NO_DATA, future.result().message
    # A robot holding still does not excite the payload.
    future = identify.call_async(request)
    spin_until(robot.client, lambda: False, 0.3)
    for _ in range(0, 1100, 20):
        for _ in range(20):
            s = send(g)
        answered(s)
    assert spin_until(robot.client, future.done, 10.0)
    assert future.result().error_code == codes.INSUFFICIENT_EXCITATION, future.result().message
    robot.diagnostics.clear()
    assert spin_until(robot.client, lambda: robot.diagnostics, 3.0)
    values = {kv.key: kv.value for kv in robot.diagnostics[-1].values}
    assert int(values['efforts_dropped']) >= 4 and int(values['observer_resets']) >= 3
    # A new robot description during a recording cuts it short (the last check: the node
    # serves the demo arm afterwards).
    future = identify.call_async(request)
    spin_until(robot.client, lambda: False, 0.3)
    for _ in range(30):
        answered(send(g))
    description = robot.client.create_publisher(String, f'/{NS}/robot_description',
                                                COLLISION_QOS)
    with open(DEMO_ARM) as f:
        description.publish(String(data=f.read()))
    assert spin_until(robot.client, future.done, 10.0)
    assert future.result().error_code == codes.INTERRUPTED, future.result().message
    assert 'description' in future.result().message
    assert node.proc.poll() is None
