"""A faulty link between the simulation and the dynamics node, as its own process.

``python fault_relay.py NAMESPACE`` relays ``/NAMESPACE/joint_states`` to
``/NAMESPACE/faulty/joint_states``, faulted as a ``std_msgs/String`` on ``/NAMESPACE/fault``
says. Delays and drops are measured on the states' own stamps (simulated time), so that they
mean the same whatever the simulation's pace:

- ``pass``: every state relayed at once (releasing any held back);
- ``drop S``: states stamped within S seconds of the first one after the order are dropped,
  then ``pass``;
- ``delay S``: a state is relayed when one stamped S seconds after it arrives (those stamped
  after the newest, from before the clock went back, at once);
- ``burst N``: states held back and relayed N at a time, back to back.

Prints ``ready`` once its subscriptions and publisher are made.
"""
import sys

import rclpy
from rclpy.qos import QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from std_msgs.msg import String


def seconds(stamp):
    return stamp.sec + 1e-9 * stamp.nanosec


class Relay:
    """The relay's state: the fault in force and the states held back."""

    def __init__(self, node, namespace):
        self.mode, self.value, self.drop_from = 'pass', 0.0, None
        self.held = []
        qos = QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE)
        self.out = node.create_publisher(JointState, f'/{namespace}/faulty/joint_states', qos)
        node.create_subscription(JointState, f'/{namespace}/joint_states', self.on_state, qos)
        node.create_subscription(String, f'/{namespace}/fault', self.on_fault, 10)

    def on_fault(self, msg):
        mode, *value = msg.data.split()
        self.release(len(self.held))
        self.mode, self.value, self.drop_from = mode, float(value[0]) if value else 0.0, None

    def release(self, count):
        for msg in self.held[:count]:
            self.out.publish(msg)
        del self.held[:count]

    def on_state(self, msg):
        t = seconds(msg.header.stamp)
        if self.mode == 'drop':
            self.drop_from = t if self.drop_from is None else self.drop_from
            if t - self.drop_from < self.value:
                return
            self.mode = 'pass'
        self.held.append(msg)
        if self.mode == 'delay':
            # In order, while the oldest held is due; one stamped after this one comes from
            # before the clock went back (a reset) and goes on now, as if it had been in flight.
            due = 0
            for m in self.held:
                stamp = seconds(m.header.stamp)
                if not (stamp <= t - self.value + 1e-9 or stamp > t):
                    break
                due += 1
            self.release(due)
        elif self.mode == 'burst':
            if len(self.held) >= self.value:
                self.release(len(self.held))
        else:
            self.release(len(self.held))


def main(namespace):
    rclpy.init()
    node = rclpy.create_node('fault_relay', namespace=namespace)
    Relay(node, namespace)
    print('ready', flush=True)
    try:
        rclpy.spin(node)
    except KeyboardInterrupt:
        pass
    finally:
        node.destroy_node()
        rclpy.try_shutdown()


if __name__ == '__main__':
    main(sys.argv[1])
