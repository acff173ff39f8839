"""The per-tip topics of the dynamics node: ``poses/<tip>``, ``twists/<tip>``,
``jacobians/<tip>``, ``wrench_estimates/<tip>`` published, ``wrenches/<tip>`` subscribed;
``<tip>`` is the tip frame's :func:`~ros_dynamics.ros.frame_names.topic_token`.

:class:`TipTopics` keeps exactly the topics of the tips served: :meth:`TipTopics.update` creates
those of new tips and destroys those of tips no longer served.
"""
from geometry_msgs.msg import PoseStamped, TwistStamped, WrenchStamped
from rclpy.event_handler import PublisherEventCallbacks
from rclpy.qos_overriding_options import QoSOverridingOptions
from std_msgs.msg import Float64MultiArray

#: History depth of the per-tip topics.
DEPTH = 10


def output_publisher(node, kind, topic):
    """A publisher of an output topic: depth :data:`DEPTH`, QoS overridable by parameters, and
    no QoS-event handlers. rclpy's executor polls every handler in Python on every wake-up (two
    per publisher by default: incompatible QoS and type), which at 1 kHz cost the node about a
    tenth of a core; a subscriber with incompatible QoS still reports it on its own side.
    """
    return node.create_publisher(
        kind, topic, DEPTH, qos_overriding_options=QoSOverridingOptions.with_default_policies(),
        event_callbacks=PublisherEventCallbacks(use_default_callbacks=False))


class TipTopics:
    """Publishers and the wrench subscription of each tip served, by tip frame."""

    def __init__(self, node, on_wrench):
        """``on_wrench(tip, msg)`` is called with each wrench received for a tip."""
        self._node = node
        self._on_wrench = on_wrench
        # tip -> (token, (pose, twist, Jacobian publishers), wrench sub, wrench estimate pub)
        self._topics = {}

    def update(self, tips, tokens):
        """Serve the topics of ``tips`` (named by ``tokens``), and only those."""
        wanted = dict(zip(tips, tokens))
        for tip in [t for t, entry in self._topics.items() if wanted.get(t) != entry[0]]:
            self._destroy(tip)
        node = self._node
        for tip, token in wanted.items():
            if tip in self._topics:
                continue
            publishers = (output_publisher(node, PoseStamped, f'poses/{token}'),
                          output_publisher(node, TwistStamped, f'twists/{token}'),
                          output_publisher(node, Float64MultiArray, f'jacobians/{token}'))
            subscription = node.create_subscription(
                WrenchStamped, f'wrenches/{token}',
                lambda msg, tip=tip: self._on_wrench(tip, msg), DEPTH,
                qos_overriding_options=QoSOverridingOptions.with_default_policies())
            estimates = output_publisher(node, WrenchStamped, f'wrench_estimates/{token}')
            self._topics[tip] = (token, publishers, subscription, estimates)

    def publishers(self, tip):
        """The (pose, twist, Jacobian) publishers of ``tip``."""
        return self._topics[tip][1]

    def wrench_estimate_publisher(self, tip):
        """The ``wrench_estimates/<tip>`` publisher of ``tip``."""
        return self._topics[tip][3]

    def _destroy(self, tip):
        _, publishers, subscription, estimates = self._topics.pop(tip)
        for publisher in publishers + (estimates,):
            self._node.destroy_publisher(publisher)
        self._node.destroy_subscription(subscription)

    def __len__(self):
        return len(self._topics)
