"""The ROS 2 layer of ros_dynamics: message conversions and the nodes that wrap the engine."""
