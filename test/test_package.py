"""Packaging: both packages found by colcon, the interface package built and importable,
the engine importable without ROS.
"""
import os
import shutil
import signal
import subprocess
import sys
import sysconfig
import time
import xml.etree.ElementTree as ET

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_colcon_finds_both_packages(tmp_path):
    colcon = shutil.which('colcon') or os.path.join(os.path.dirname(sys.executable), 'colcon')
    result = subprocess.run([colcon, '--log-base', str(tmp_path), 'list', '--base-paths', '.',
                             'ros_dynamics_interfaces'],
                            cwd=REPO, capture_output=True, text=True, check=True)
    found = {line.split()[0]: line.split()[2] for line in result.stdout.splitlines()}
    assert found == {'ros_dynamics': '(ros.ament_python)',
                     'ros_dynamics_interfaces': '(ros.ament_cmake)'}, result.stdout


def test_interface_package_is_built_with_its_error_codes():
    from ros_dynamics_interfaces.srv import ComputeFK, SolveIK
    r = SolveIK.Response
    assert (r.SUCCESS, r.NO_IK_SOLUTION, r.TIMED_OUT, r.INVALID_ROBOT_STATE,
            r.INVALID_LINK_NAME, r.FRAME_TRANSFORM_FAILURE) == (1, -31, -6, -17, -18, -21)
    assert r.INVALID_REQUEST < 0
    req = SolveIK.Request()
    assert req.target.header.frame_id == '' and req.timeout.sec == 0
    assert hasattr(req, 'position_only') and hasattr(SolveIK.Response(), 'iterations')
    assert ComputeFK.Response().poses == []
    assert hasattr(ComputeFK.Request(), 'reference_frame')


def test_package_xml_declares_the_dependencies():
    root = ET.parse(os.path.join(REPO, 'package.xml')).getroot()
    assert root.get('format') == '3'
    deps = {e.text for e in root if e.tag.endswith('depend')}
    for key in ('rclpy', 'std_msgs', 'sensor_msgs', 'geometry_msgs', 'trajectory_msgs',
                'visualization_msgs', 'diagnostic_msgs', 'ros_dynamics_interfaces',
                'python3-numpy', 'python3-scipy', 'launch', 'launch_ros', 'python3-pytest',
                'python3-rosbags-pip', 'urdfdom_py', 'python3-lxml'):
        assert key in deps, key
    assert root.find('export/build_type').text == 'ament_python'


def test_engine_imports_without_ros():
    code = ('import sys; import ros_dynamics.engine as e; '
            'assert not any(m.startswith(("rclpy", "rosidl")) for m in sys.modules), '
            '[m for m in sys.modules if m.startswith("rclpy")]; print(e.RobotModel)')
    # PYTHONPATH holds only the folder ros_dynamics comes from (no sourced ROS 2 on it): the
    # checkout under make env, install/ros_dynamics/... or the source folder under colcon test.
    import ros_dynamics
    env = dict(os.environ,
               PYTHONPATH=os.path.dirname(os.path.dirname(os.path.abspath(ros_dynamics.__file__))))
    result = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True,
                            env=env, cwd='/')
    assert result.returncode == 0, result.stderr


def test_setup_installs_executables_where_ros2_run_finds_them():
    with open(os.path.join(REPO, 'setup.cfg')) as f:
        cfg = f.read()
    assert 'install_scripts=$base/lib/ros_dynamics' in cfg
    assert 'script_dir=$base/lib/ros_dynamics' in cfg


def test_colcon_build_installs_executables_launch_and_config(tmp_path):
    """Build ros_dynamics as a ROS user would and start the node from the install space."""
    colcon = shutil.which('colcon') or os.path.join(os.path.dirname(sys.executable), 'colcon')
    subprocess.run([colcon, '--log-base', str(tmp_path / 'log'), 'build', '--base-paths', '.',
                    '--packages-select', 'ros_dynamics', '--build-base', str(tmp_path / 'build'),
                    '--install-base', str(tmp_path / 'install')],
                   cwd=REPO, check=True, capture_output=True, text=True)
    prefix = tmp_path / 'install' / 'ros_dynamics'
    for path in ('lib/ros_dynamics/dynamics_node', 'lib/ros_dynamics/demo',
                 'share/ros_dynamics/launch/ros_dynamics.launch.py',
                 'share/ros_dynamics/config/ros_dynamics.yaml',
                 'share/ros_dynamics/robots/demo_arm.urdf', 'share/ros_dynamics/package.xml',
                 'share/ament_index/resource_index/packages/ros_dynamics'):
        assert (prefix / path).exists(), path
    site = next(prefix.glob('lib/python3*/site-packages'))
    env = dict(os.environ, PYTHONPATH=f'{site}{os.pathsep}{os.environ.get("PYTHONPATH", "")}')
    proc = subprocess.Popen(
        [str(prefix / 'lib/ros_dynamics/dynamics_node'), '--ros-args', '-r', '__ns:=/installed',
         '-p', f'urdf_file:={prefix / "share/ros_dynamics/robots/demo_arm.urdf"}'],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=str(tmp_path))
    output = ''
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and "model 'demo_arm'" not in output:
            line = proc.stdout.readline()
            if not line:
                break
            output += line
        assert "model 'demo_arm'" in output, output
        assert str(prefix) in subprocess.run(
            [sys.executable, '-c', 'import ros_dynamics; print(ros_dynamics.__file__)'],
            env=env, capture_output=True, text=True, cwd=str(tmp_path)).stdout
    finally:
        proc.send_signal(signal.SIGINT)
        assert proc.wait(10) == 0


def test_node_executables_come_from_the_colcon_install_or_the_checkouts_venv(tmp_path,
                                                                            monkeypatch):
    """Tests start nodes from install/ros_dynamics/lib/ros_dynamics under colcon test."""
    import ros_helpers
    prefix = tmp_path / 'install' / 'ros_dynamics'
    (prefix / 'share/ament_index/resource_index/packages').mkdir(parents=True)
    (prefix / 'share/ament_index/resource_index/packages/ros_dynamics').touch()
    node = prefix / 'lib/ros_dynamics/dynamics_node'
    node.parent.mkdir(parents=True)
    node.write_text('#!/bin/sh\n')
    node.chmod(0o755)
    monkeypatch.setenv('AMENT_PREFIX_PATH',
                       os.pathsep.join(filter(None, [str(prefix),
                                                     os.environ.get('AMENT_PREFIX_PATH')])))
    # Not the checkout's own .venv (colcon test, a sourced workspace): the install's node.
    monkeypatch.setattr(ros_helpers, 'REPO', str(tmp_path))
    assert ros_helpers.executable('dynamics_node') == str(node)
    # The checkout's own .venv (make test): its editable entry point, whatever is sourced.
    monkeypatch.setattr(ros_helpers, 'REPO', os.path.dirname(os.path.realpath(sys.prefix)))
    in_venv = os.path.join(sysconfig.get_paths()['scripts'], 'dynamics_node')
    expected = in_venv if os.access(in_venv, os.X_OK) else str(node)
    assert ros_helpers.executable('dynamics_node') == expected
