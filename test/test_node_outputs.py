"""The node's outputs checked number by number against the engine, across processes:
twists, Jacobians, held wrenches, payload and gravity set at run time, trajectory feedforward,
markers and diagnostics.
"""
import numpy as np
import pytest
from robots import DEMO_ARM
from ros_helpers import NodeProcess, spin_until

rclpy = pytest.importorskip('rclpy', reason='ROS 2 (rclpy) is part of make env')
from builtin_interfaces.msg import Duration  # noqa: E402
from diagnostic_msgs.msg import DiagnosticArray  # noqa: E402
from geometry_msgs.msg import TwistStamped, WrenchStamped  # noqa: E402
from rcl_interfaces.msg import Parameter, ParameterType, ParameterValue  # noqa: E402
from rcl_interfaces.srv import SetParameters  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from std_msgs.msg import Float64MultiArray  # noqa: E402
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint  # noqa: E402
from visualization_msgs.msg import MarkerArray  # noqa: E402

from ros_dynamics.engine import Payload, RobotModel  # noqa: E402

NS = 'out'
NAMES = ['shoulder_pan_joint', 'shoulder_lift_joint', 'elbow_joint', 'wrist_1_joint',
         'wrist_2_joint', 'wrist_3_joint']
Q = np.array([0.3, -0.9, 1.2, -0.4, 0.7, 0.1])
QD = np.array([0.2, -0.1, 0.3, 0.5, -0.4, 0.6])


def model():
    return RobotModel.from_urdf_file(DEMO_ARM)


@pytest.fixture(scope='module')
def ros(tmp_path_factory):
    rclpy.init()
    client = rclpy.create_node('outputs_client')
    log = tmp_path_factory.mktemp('outputs') / 'node.log'
    node = NodeProcess('dynamics_node', '-r', f'__ns:=/{NS}', '-p', f'urdf_file:={DEMO_ARM}',
                       '-p', 'markers_rate:=100.0', log_path=str(log))
    received = {}

    def keep(name):
        return lambda m: received.setdefault(name, []).append(m)

    for topic, kind in (('gravity_torques', JointState), ('twists/tool0', TwistStamped),
                        ('jacobians/tool0', Float64MultiArray), ('markers', MarkerArray),
                        ('feedforward_command', Float64MultiArray),
                        ('feedforward_trajectory', JointTrajectory)):
        client.create_subscription(kind, f'/{NS}/{topic}', keep(topic), 100)
    client.create_subscription(DiagnosticArray, '/diagnostics', keep('diagnostics'), 10)
    pubs = {'joint_states': client.create_publisher(JointState, f'/{NS}/joint_states', 10),
            'joint_trajectory': client.create_publisher(JointTrajectory,
                                                        f'/{NS}/joint_trajectory', 10),
            'wrench': client.create_publisher(WrenchStamped, f'/{NS}/wrenches/tool0', 10)}
    params = client.create_client(SetParameters, f'/{NS}/ros_dynamics/set_parameters')
    assert params.wait_for_service(timeout_sec=20.0), node.output()
    yield client, pubs, received, params, node
    code = node.stop()
    client.destroy_node()
    rclpy.shutdown()
    assert code == 0, node.output()


def publish_state(pubs, q=Q, qd=QD):
    msg = JointState(name=NAMES, position=list(q), velocity=list(qd))
    pubs['joint_states'].publish(msg)


def fresh(client, pubs, received, topic, predicate=lambda m: True, timeout=10.0):
    """Publish the state until a new message on ``topic`` satisfies ``predicate``."""
    received.pop(topic, None)
    assert spin_until(client, lambda: any(predicate(m) for m in received.get(topic, [])),
                      timeout, lambda: publish_state(pubs))
    return [m for m in received[topic] if predicate(m)][-1]


def set_params(client, params, **values):
    req = SetParameters.Request()
    for name, value in values.items():
        v = ParameterValue()
        if isinstance(value, str):
            v.type, v.string_value = ParameterType.PARAMETER_STRING, value
        elif isinstance(value, (list, tuple)):
            v.type, v.double_array_value = ParameterType.PARAMETER_DOUBLE_ARRAY, \
                [float(x) for x in value]
        else:
            v.type, v.double_value = ParameterType.PARAMETER_DOUBLE, float(value)
        req.parameters.append(Parameter(name=name.replace('__', '.'), value=v))
    future = params.call_async(req)
    assert spin_until(client, future.done, 10.0)
    return future.result().results


def test_twist_and_jacobian(ros):
    client, pubs, received, _, _ = ros
    m = model()
    twist = fresh(client, pubs, received, 'twists/tool0')
    expected = m.frame_twist(Q, QD, 'tool0', 'local_world_aligned')
    t = twist.twist
    np.testing.assert_allclose([t.linear.x, t.linear.y, t.linear.z, t.angular.x, t.angular.y,
                                t.angular.z], expected, atol=1e-12)
    assert twist.header.frame_id == 'base_link'
    jac = fresh(client, pubs, received, 'jacobians/tool0')
    J = np.array(jac.data).reshape(6, m.nq)
    np.testing.assert_allclose(J, m.jacobian(Q, 'tool0'), atol=1e-12)
    assert jac.layout.dim[0].size == 6 and jac.layout.dim[1].label == 'cols:' + ','.join(NAMES)


def test_held_wrench_adds_jacobian_transpose_force(ros):
    client, pubs, received, _, _ = ros
    m = model()
    wrench = WrenchStamped()
    wrench.header.frame_id = 'base_link'
    wrench.wrench.force.x, wrench.wrench.force.z, wrench.wrench.torque.y = 5.0, -20.0, 1.5
    F = np.array([5.0, 0, -20.0, 0, 1.5, 0])
    expected = m.gravity_torques(Q) + m.jacobian(Q, 'tool0').T @ F

    def holds(msg):
        return np.allclose(msg.effort, expected, atol=1e-9)

    received.pop('gravity_torques', None)
    assert spin_until(client, lambda: any(holds(x) for x in received.get('gravity_torques', [])),
                      10.0, lambda: (pubs['wrench'].publish(wrench), publish_state(pubs)))
    pubs['wrench'].publish(WrenchStamped())              # a zero wrench releases it
    fresh(client, pubs, received, 'gravity_torques',
          lambda x: np.allclose(x.effort, m.gravity_torques(Q), atol=1e-9))


def test_payload_and_gravity_change_at_run_time(ros):
    client, pubs, received, params, _ = ros
    m = model()
    inertia = [0.01, 0.0, 0.0, 0.012, 0.0, 0.008]
    results = set_params(client, params, payload__frame='tool0', payload__mass=2.5,
                         payload__com=[0.0, 0.0, 0.05], payload__inertia=inertia)
    assert all(r.successful for r in results), [r.reason for r in results]
    m.update_settings(payloads=[Payload('tool0', 2.5, [0, 0, 0.05],
                                        np.diag([0.01, 0.012, 0.008]))])
    fresh(client, pubs, received, 'gravity_torques',
          lambda x: np.allclose(x.effort, m.gravity_torques(Q), atol=1e-9))
    bad = set_params(client, params, payload__frame='nowhere')
    assert not bad[0].successful and 'unknown frame' in bad[0].reason
    nan = set_params(client, params, gravity=[0.0, 0.0, float('nan')])
    assert not nan[0].successful and 'gravity' in nan[0].reason
    assert set_params(client, params, gravity=[0.0, 0.0, -1.62])[0].successful   # the Moon
    m.update_settings(gravity=[0, 0, -1.62])
    fresh(client, pubs, received, 'gravity_torques',
          lambda x: np.allclose(x.effort, m.gravity_torques(Q), atol=1e-9))
    # Back to the robot alone, and seen to be, before the next test reads the outputs.
    restored = set_params(client, params, gravity=[0.0, 0.0, -9.81], payload__mass=0.0)
    assert all(r.successful for r in restored), [r.reason for r in restored]
    fresh(client, pubs, received, 'gravity_torques',
          lambda x: np.allclose(x.effort, model().gravity_torques(Q), atol=1e-9))


def test_trajectory_feedforward(ros):
    client, pubs, received, _, _ = ros
    m = model()
    fresh(client, pubs, received, 'gravity_torques')        # the node knows the state now
    traj = JointTrajectory()
    traj.joint_names = NAMES[1:3]                            # a partial trajectory
    samples = [(0.0, [-0.9, 1.2], [0.0, 0.0], [0.5, -0.5]), (1.0, [-0.6, 0.9], [0.4, -0.4],
                                                             [0.0, 0.0]),
               (2.0, [-0.5, 0.8], [0.0, 0.0], [0.0, 0.0])]
    for t, p, v, a in samples:
        traj.points.append(JointTrajectoryPoint(positions=p, velocities=v, accelerations=a,
                                                time_from_start=Duration(sec=int(t))))
    received.pop('feedforward_trajectory', None)
    received.pop('feedforward_command', None)
    pubs['joint_trajectory'].publish(traj)
    assert spin_until(client, lambda: received.get('feedforward_trajectory'), 10.0,
                      lambda: publish_state(pubs))
    out = received['feedforward_trajectory'][-1]
    assert list(out.joint_names) == NAMES[1:3]
    for (_, p, v, a), point in zip(samples, out.points):
        q, qd, qdd = Q.copy(), np.zeros(6), np.zeros(6)
        q[1:3], qd[1:3], qdd[1:3] = p, v, a
        np.testing.assert_allclose(point.effort, m.inverse_dynamics(q, qd, qdd)[1:3], atol=1e-9)
    # While it runs, feedforward commands come with the joint states.
    assert spin_until(client, lambda: len(received.get('feedforward_command', [])) > 3, 10.0,
                      lambda: publish_state(pubs))
    assert len(received['feedforward_command'][-1].data) == 6
    # A malformed trajectory is rejected and the node keeps serving.
    bad = JointTrajectory()
    bad.joint_names = ['elbow_joint']
    bad.points = [JointTrajectoryPoint(positions=[0.1], time_from_start=Duration(sec=1)),
                  JointTrajectoryPoint(positions=[0.2], time_from_start=Duration(sec=1))]
    received.pop('feedforward_trajectory', None)
    pubs['joint_trajectory'].publish(bad)
    fresh(client, pubs, received, 'gravity_torques')
    assert 'feedforward_trajectory' not in received


def test_markers_and_diagnostics(ros):
    client, pubs, received, _, node = ros
    fresh(client, pubs, received, 'gravity_torques')       # markers on their way are in
    markers = fresh(client, pubs, received, 'markers')
    namespaces = [mk.ns for mk in markers.markers]
    assert namespaces.count('ros_dynamics/center_of_mass') == 1
    assert namespaces.count('ros_dynamics/manipulability/tool0') == 1
    assert namespaces.count('ros_dynamics/gravity_torque') == 6
    assert all(mk.header.frame_id == 'base_link' for mk in markers.markers)
    com = [mk for mk in markers.markers if mk.ns.endswith('center_of_mass')][0].pose.position
    np.testing.assert_allclose([com.x, com.y, com.z], model().center_of_mass(Q), atol=1e-9)
    # The counters are per report: one of a period with joint states arriving counts them (a
    # report already received may be of a quiet period between tests -- CI's one failure).
    def counted():
        return [values for d in received.get('diagnostics', []) for s in d.status
                if s.name == f'/{NS}/ros_dynamics: dynamics'
                for values in [{kv.key: kv.value for kv in s.values}]
                if int(values['joint_states']) > 0]
    assert spin_until(client, counted, 5.0, lambda: publish_state(pubs))
    assert 'compute_time_median_ms' in counted()[-1]


def test_bursts_of_joint_states_are_answered_message_by_message(ros):
    """Bursts of 40 states published back to back (faster than one executor round each, within
    the input queue of 50): every one is answered with its own torques, in order.
    """
    client, pubs, received, _, _ = ros
    fresh(client, pubs, received, 'gravity_torques')
    answers = []
    sub = client.create_subscription(
        JointState, f'/{NS}/gravity_torques',
        lambda g: answers.append(g) if g.header.stamp.sec == 1000 else None, 1000)
    m = model()
    states = np.random.default_rng(7).uniform(-1.0, 1.0, (200, m.nq))
    try:
        for burst in range(0, len(states), 40):
            for i in range(burst, burst + 40):
                msg = JointState(name=NAMES, position=list(states[i]))
                msg.header.stamp.sec, msg.header.stamp.nanosec = 1000, i
                pubs['joint_states'].publish(msg)
            expected = burst + 40
            assert spin_until(client, lambda n=expected: len(answers) == n, 10.0), len(answers)
    finally:
        client.destroy_subscription(sub)
    assert [g.header.stamp.nanosec for g in answers] == list(range(len(states)))
    np.testing.assert_allclose([g.effort for g in answers], m.gravity_torques(states),
                               atol=1e-9)


def test_run_time_values_are_checked_like_start_up_values(ros):
    client, pubs, received, params, _ = ros
    for change, name in ((dict(payload__mass=-1.0), 'payload.mass'),
                         (dict(payload__mass=float('nan')), 'payload.mass'),
                         (dict(gravity=[0.0, 0.0, 1e308]), 'parameter gravity'),
                         (dict(markers_rate=-1.0), 'markers_rate'),
                         (dict(payload__inertia=[1.0, 0.0, 0.0, -1.0, 0.0, 1.0]),
                          'parameter payload.inertia')):
        [result] = set_params(client, params, **change)
        assert not result.successful and name in result.reason, result.reason
    fresh(client, pubs, received, 'gravity_torques',
          lambda x: np.allclose(x.effort, model().gravity_torques(Q), atol=1e-9))
