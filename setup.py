"""Install the ros_dynamics ament_python package (engine, nodes, launch and config files)."""
from glob import glob

from setuptools import find_packages, setup

PACKAGE = 'ros_dynamics'

setup(
    name=PACKAGE,
    version='0.1.0',
    packages=find_packages(include=[PACKAGE, PACKAGE + '.*']),
    package_data={PACKAGE: ['robots/*.urdf', 'py.typed', 'ros/fastdds_profile.xml']},
    data_files=[
        ('share/ament_index/resource_index/packages', ['resource/' + PACKAGE]),
        ('share/' + PACKAGE, ['package.xml']),
        ('share/' + PACKAGE + '/launch', glob('launch/*.launch.py')),
        ('share/' + PACKAGE + '/config', glob('config/*')),
        ('share/' + PACKAGE + '/robots', glob(PACKAGE + '/robots/*.urdf')),
    ],
    # The lowest versions supported: Humble's (Ubuntu 22.04: Python 3.10, NumPy 1.21, SciPy
    # 1.8); test/test_compatibility.py keeps the code to what they have.
    python_requires='>=3.10',
    install_requires=['setuptools', 'numpy>=1.21', 'scipy>=1.8', 'urdfdom-py', 'lxml'],
    zip_safe=True,
    maintainer='ros_dynamics maintainers',
    maintainer_email='maintainers@ros-dynamics.dev',
    description='Rigid-body kinematics and dynamics of URDF robots on ROS 2 topics.',
    license='Apache-2.0',
    tests_require=['pytest'],
    entry_points={
        'console_scripts': [
            'dynamics_node = ros_dynamics.ros.main:main',
            'sim_node = ros_dynamics.ros.sim_node:main',
            'effort_controller = ros_dynamics.ros.effort_controller:main',
            'demo = ros_dynamics.demo:main',
            'ros-dynamics-inertia = ros_dynamics.inertia_tool:main',
            'ros-dynamics-identify = ros_dynamics.identify_tool:main',
        ],
    },
)
