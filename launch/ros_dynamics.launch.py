"""Launch the ros_dynamics node beside robot_state_publisher and ros2_control.

Robot model, in order of precedence:
  description_command:='xacro /path/robot.urdf.xacro'   its output as robot_description
  urdf_file:=/path/robot.urdf                            read by the node
  (neither)                                              the robot_description topic
Examples:
  ros2 launch ros_dynamics ros_dynamics.launch.py
  ros2 launch ros_dynamics ros_dynamics.launch.py urdf_file:=/path/robot.urdf namespace:=arm
"""
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.substitutions import Command, LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue
from launch_ros.substitutions import FindPackageShare

from launch import LaunchDescription


def _dynamics_node(context):
    """The node, with robot_description from description_command when one is given."""
    overrides = {'urdf_file': LaunchConfiguration('urdf_file'),
                 'use_sim_time': LaunchConfiguration('use_sim_time')}
    if LaunchConfiguration('description_command').perform(context):
        overrides['robot_description'] = ParameterValue(
            Command(LaunchConfiguration('description_command')), value_type=str)
    return [Node(package='ros_dynamics', executable='dynamics_node', name='ros_dynamics',
                 namespace=LaunchConfiguration('namespace'), output='screen',
                 emulate_tty=True,
                 parameters=[LaunchConfiguration('params_file'), overrides])]


def generate_launch_description():
    """Declare the arguments and the node."""
    return LaunchDescription([
        DeclareLaunchArgument('urdf_file', default_value='',
                              description='URDF file of the robot; empty: see '
                                          'description_command, else the robot_description '
                                          'topic'),
        DeclareLaunchArgument('description_command', default_value='',
                              description='Command printing the URDF (e.g. "xacro file.xacro");'
                                          ' its output is passed as robot_description'),
        DeclareLaunchArgument('params_file', default_value=PathJoinSubstitution(
            [FindPackageShare('ros_dynamics'), 'config', 'ros_dynamics.yaml']),
            description='Parameters of the node (YAML)'),
        DeclareLaunchArgument('namespace', default_value='',
                              description='Namespace of the node and of its relative topics'),
        DeclareLaunchArgument('use_sim_time', default_value='false',
                              description='Use the /clock topic (simulation time)'),
        OpaqueFunction(function=_dynamics_node),
    ])
