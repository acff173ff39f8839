"""Launch a simulated robot (MuJoCo) with the ros_dynamics node holding it against gravity.

The simulation (``sim_node``) steps a URDF at 1 kHz of simulated time, publishes joint_states
and /clock, and takes effort commands on ``sim/commands`` as a ros2_control forward command
controller takes them; the dynamics node runs on simulated time and, with
``hold:=true``, its gravity_command is remapped onto those commands (the robot held by gravity
compensation alone). With ``controller:=true`` the PD + feedforward effort_controller commands
the robot instead, tracking what arrives on joint_trajectory.

Examples:
  ros2 launch ros_dynamics sim.launch.py
  ros2 launch ros_dynamics sim.launch.py urdf_file:=/path/robot.urdf controller:=true kp:=100.0
"""
import os

from ament_index_python.packages import get_package_share_directory
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

from launch import LaunchDescription


def _nodes(context):
    """The simulation, the dynamics node and (with controller:=true) the effort controller."""
    urdf = LaunchConfiguration('urdf_file').perform(context) or os.path.join(
        get_package_share_directory('ros_dynamics'), 'robots', 'demo_arm.urdf')
    namespace = LaunchConfiguration('namespace').perform(context)
    controller = LaunchConfiguration('controller').perform(context).lower() == 'true'
    sim = Node(package='ros_dynamics', executable='sim_node', name='sim', namespace=namespace,
               output='screen', parameters=[{
                   'urdf_file': urdf,
                   'real_time_factor': float(LaunchConfiguration('real_time_factor')
                                             .perform(context))}])
    remaps = [] if controller else [('gravity_command', 'sim/commands')]
    dynamics = Node(package='ros_dynamics', executable='dynamics_node', name='ros_dynamics',
                    namespace=namespace, output='screen', remappings=remaps,
                    parameters=[{'urdf_file': urdf, 'use_sim_time': True}])
    nodes = [sim, dynamics]
    if controller:
        from ros_dynamics.engine import RobotModel
        joints = list(RobotModel.from_urdf_file(urdf).actuated_joint_names)
        gain = float(LaunchConfiguration('kp').perform(context))
        nodes.append(Node(
            package='ros_dynamics', executable='effort_controller', name='effort_controller',
            namespace=namespace, output='screen',
            remappings=[('commands', 'sim/commands'), ('feedforward', 'feedforward_command'),
                        ('gravity', 'gravity_command')],
            parameters=[{'use_sim_time': True, 'joints': joints, 'kp': [gain],
                         'kd': [2.0 * gain ** 0.5]}]))
    return nodes


def generate_launch_description():
    """Declare the arguments and the nodes."""
    return LaunchDescription([
        DeclareLaunchArgument('urdf_file', default_value='',
                              description='URDF of the robot; empty: the bundled demo arm'),
        DeclareLaunchArgument('namespace', default_value='',
                              description='Namespace of the nodes and of their topics'),
        DeclareLaunchArgument('real_time_factor', default_value='1.0',
                              description='Simulated seconds per wall-clock second'),
        DeclareLaunchArgument('controller', default_value='false',
                              description='true: PD + feedforward effort_controller; false: '
                                          'gravity_command alone'),
        DeclareLaunchArgument('kp', default_value='100.0',
                              description='Proportional gain of every joint [N m/rad] '
                                          '(derivative gain 2 sqrt(kp))'),
        OpaqueFunction(function=_nodes),
    ])
