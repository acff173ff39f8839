"""The dynamics node on a quadruped with a floating base, across processes: odometry published by
the test, contacts changed at run time, torques, center of mass and momentum checked against the
engine (whose contact torques test_floating_base.py checks against RNEA and Pinocchio), support
markers, Jacobian columns, hostile odometry, stale odometry, stances that cannot hold the robot.
"""
import math

import numpy as np
import pytest
from robots import SOLO12, erd, load_floating
from ros_helpers import NodeProcess, client_node, odometry_message, spin_until

rclpy = pytest.importorskip('rclpy', reason='ROS 2 (rclpy) is part of make env')
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus  # noqa: E402
from geometry_msgs.msg import PointStamped, WrenchStamped  # noqa: E402
from nav_msgs.msg import Odometry  # noqa: E402
from rcl_interfaces.msg import Parameter, ParameterType, ParameterValue  # noqa: E402
from rcl_interfaces.srv import SetParameters  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from std_msgs.msg import Float64MultiArray  # noqa: E402
from visualization_msgs.msg import Marker, MarkerArray  # noqa: E402

MODEL = load_floating(erd(SOLO12))
FEET = ['FL_FOOT', 'FR_FOOT', 'HL_FOOT', 'HR_FOOT']
NS = 'solo'
PREFIX = 'solo/'


@pytest.fixture(scope='module')
def client():
    with client_node('floating_client') as node:
        yield node


def odometry(p, quat_xyzw, twist, frame='odom', child='base_link'):
    return odometry_message(p, quat_xyzw, twist, PREFIX + frame, PREFIX + child)


def joint_state(q_a, qd_a, sec):
    msg = JointState(name=list(MODEL.actuated_joint_names), position=[float(x) for x in q_a],
                     velocity=[float(x) for x in qd_a])
    msg.header.stamp.sec = sec
    return msg


def full(odom_args, q_a, qd_a):
    p, quat, twist = odom_args
    q = np.concatenate([p, np.array(quat) / np.linalg.norm(quat), q_a])
    return q, np.concatenate([twist, qd_a])


def set_param(client, name, value):
    params = client.create_client(SetParameters, f'/{NS}/ros_dynamics/set_parameters')
    assert params.wait_for_service(timeout_sec=10.0)
    v = ParameterValue(type=ParameterType.PARAMETER_STRING_ARRAY, string_array_value=value)
    future = params.call_async(SetParameters.Request(parameters=[Parameter(name=name, value=v)]))
    assert spin_until(client, future.done, 10.0)
    client.destroy_client(params)
    return future.result().results[0]


def test_a_quadruped_on_odometry_and_changing_contacts(client, tmp_path):
    # The joint states are stamped in test seconds, not on the node's clock: no age bound.
    node = NodeProcess('dynamics_node', '-r', f'__ns:=/{NS}', '-p', f'urdf_file:={erd(SOLO12)}',
                       '-p', 'command.max_state_age:=0.0',
                       '-p', 'root_joint:=floating', '-p', f'frame_prefix:={PREFIX}',
                       '-p', f'contact_frames:={FEET}'.replace("'", ''),
                       '-p', 'markers_rate:=100.0', '-p', 'odometry.timeout:=0.5',
                       '-p', 'diagnostics.quiet_period:=1.0', '-p', 'publish.momentum:=true',
                       log_path=str(tmp_path / 'node.log'))
    try:
        torques, commands, coms, momenta, arrays, diags, jacobians = {}, [], {}, {}, [], [], []
        client.create_subscription(JointState, f'/{NS}/gravity_torques',
                                   lambda m: torques.__setitem__(m.header.stamp.sec, m), 100)
        client.create_subscription(Float64MultiArray, f'/{NS}/gravity_command',
                                   commands.append, 100)
        client.create_subscription(PointStamped, f'/{NS}/center_of_mass',
                                   lambda m: coms.__setitem__(m.header.stamp.sec, m), 100)
        client.create_subscription(WrenchStamped, f'/{NS}/momentum',
                                   lambda m: momenta.__setitem__(m.header.stamp.sec, m), 100)
        client.create_subscription(MarkerArray, f'/{NS}/markers', arrays.append, 100)
        client.create_subscription(Float64MultiArray, f'/{NS}/jacobians/FL_FOOT',
                                   jacobians.append, 100)
        client.create_subscription(DiagnosticArray, '/diagnostics', lambda m: diags.extend(
            s for s in m.status if s.name.startswith(f'/{NS}/')), 100)
        odom_pub = client.create_publisher(Odometry, f'/{NS}/odom', 10)
        js_pub = client.create_publisher(JointState, f'/{NS}/joint_states', 10)
        rng = np.random.default_rng(16)
        assert spin_until(client, lambda: odom_pub.get_subscription_count() > 0
                          and js_pub.get_subscription_count() > 0, 20.0)

        def serve(odom_args, secs, wanted):
            """Odometry first, then joint states stamped ``secs``; returns their (q, v)."""
            msg = odometry(*odom_args)
            spin_until(client, lambda: False, 0.3, lambda: odom_pub.publish(msg))
            states = {}
            for sec in secs:
                q_a = np.array([0.0, 0.8, -1.6] * 4) + rng.normal(scale=0.1, size=12)
                qd_a = rng.normal(scale=0.5, size=12)
                states[sec] = (q_a, qd_a, full(odom_args, q_a, qd_a))

            def step():
                odom_pub.publish(msg)
                for sec, (q_a, qd_a, _) in states.items():
                    if sec not in wanted:
                        js_pub.publish(joint_state(q_a, qd_a, sec))
            assert spin_until(client, lambda: all(s in wanted for s in secs), 30.0, step), \
                node.output()[-3000:]
            return {sec: s[2] for sec, s in states.items()}

        # 1. Four feet, a tilted and moving base: torques, CoM and momentum as the engine's.
        base1 = ([0.4, -0.2, 0.3], [0.02, -0.03, 0.2, 0.98], [0.1, -0.2, 0.05, 0.3, -0.1, 0.2])
        for sec, (q, v) in serve(base1, range(1, 6), torques).items():
            expected = MODEL.contact_gravity_torques(q, FEET).torques
            assert torques[sec].name == list(MODEL.actuated_joint_names)
            np.testing.assert_allclose(torques[sec].effort, expected, rtol=1e-9, atol=1e-9)
            assert spin_until(client, lambda s=sec: s in coms and s in momenta, 5.0)
            com = coms[sec]
            assert com.header.frame_id == 'solo/odom'
            np.testing.assert_allclose([com.point.x, com.point.y, com.point.z],
                                       MODEL.center_of_mass(q), atol=1e-12)
            h = momenta[sec].wrench
            np.testing.assert_allclose([h.force.x, h.force.y, h.force.z, h.torque.x,
                                        h.torque.y, h.torque.z],
                                       MODEL.centroidal_momentum(q, v), rtol=1e-9, atol=1e-12)
        # The command carries no stamp: it is the torques of one of the states answered.
        assert any(np.allclose(commands[-1].data, t.effort, rtol=1e-12, atol=1e-12)
                   for t in torques.values())
        # Jacobians: nv columns named by the velocity coordinates.
        assert jacobians and len(jacobians[-1].data) == 6 * MODEL.nv
        assert jacobians[-1].layout.dim[1].label == 'cols:' + ','.join(MODEL.v_names)
        # Markers: the support polygon of the four feet (closed) and the projected CoM.
        assert spin_until(client, lambda: any(m.ns == 'ros_dynamics/support_polygon'
                                              for a in arrays for m in a.markers), 10.0)
        polygon = [m for a in arrays for m in a.markers
                   if m.ns == 'ros_dynamics/support_polygon'][-1]
        assert polygon.type == Marker.LINE_STRIP and len(polygon.points) == 5
        assert polygon.header.frame_id == 'solo/base_link'
        assert any(m.ns == 'ros_dynamics/center_of_mass_projection' for a in arrays
                   for m in a.markers)

        # 2. Hostile odometry is rejected, the last good base state kept.
        quat_nan = [math.nan, 0.0, 0.0, 1.0]
        for bad in (odometry([0, 0, 0.3], quat_nan, [0] * 6),
                    odometry([1e300, 0, 0.3], [0, 0, 0, 1], [0] * 6),
                    odometry([0, 0, 0.3], [0, 0, 0, 0], [0] * 6),
                    odometry([0, 0, 0.3], [0, 0, 0, 1], [math.inf] + [0] * 5),
                    odometry([0, 0, 0.3], [0, 0, 0, 1], [0] * 6, frame='map'),
                    odometry([0, 0, 0.3], [0, 0, 0, 1], [0] * 6, child='FL_FOOT')):
            odom_pub.publish(bad)
        spin_until(client, lambda: False, 0.3)
        q_a, qd_a = np.array([0.1, 0.7, -1.5] * 4), np.zeros(12)
        q, _ = full(base1, q_a, qd_a)
        assert spin_until(client, lambda: 50 in torques, 10.0,
                          lambda: js_pub.publish(joint_state(q_a, qd_a, 50)))
        np.testing.assert_allclose(torques[50].effort,
                                   MODEL.contact_gravity_torques(q, FEET).torques, atol=1e-9)

        # 3. Three feet, set at run time; an unknown frame is refused with the reason.
        refused = set_param(client, 'contact_frames', ['FL_FOOT', 'no_such_foot'])
        assert not refused.successful and 'no_such_foot' in refused.reason
        three = FEET[:3]
        assert set_param(client, 'contact_frames', three).successful
        base2 = ([0.0, 0.1, 0.28], [0.0, 0.0, 0.0, 1.0], [0.0] * 6)
        for sec, (q, _) in serve(base2, range(100, 104), torques).items():
            np.testing.assert_allclose(torques[sec].effort,
                                       MODEL.contact_gravity_torques(q, three).torques,
                                       rtol=1e-9, atol=1e-9)

        # 4. One foot cannot hold the robot: no torques for those states, the rest flows,
        # the diagnostics say why.
        assert set_param(client, 'contact_frames', ['FL_FOOT']).successful
        for sec in range(200, 203):
            spin_until(client, lambda s=sec: s in coms, 10.0,
                       lambda s=sec: js_pub.publish(joint_state(q_a, qd_a, s)))
        assert all(sec in coms for sec in range(200, 203))
        assert not any(sec in torques for sec in range(200, 203))
        assert spin_until(client, lambda: any(
            'cannot hold' in s.message and s.level == DiagnosticStatus.WARN for s in diags),
            5.0), [s.message for s in diags]
        assert any(k.key == 'odometry_rejected' and int(k.value) >= 6
                   for s in diags for k in s.values), [s.values for s in diags[-1:]]

        # 5. Odometry stops: stale after odometry.timeout, a WARN that says so.
        diags.clear()
        assert spin_until(client, lambda: any('odometry stale' in s.message for s in diags),
                          5.0), [s.message for s in diags]
    finally:
        assert node.stop() == 0, node.output()[-3000:]
    log = node.output()
    assert 'rejected an odometry' in log and 'gravity torques not published' in log
