"""ros_dynamics: rigid-body kinematics and dynamics of URDF robots, live on ROS 2 topics.

The numerical engine lives in :mod:`ros_dynamics.engine` and never imports ROS; the nodes in
:mod:`ros_dynamics.ros` wrap it.
"""
