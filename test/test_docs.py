"""The documentation in doc/: it builds with warnings as errors, its node reference is the
node's own (parameters from their specifications, topics and services from the code), and the
README front page stays short and points into it.
"""
import os
import re
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOC = os.path.join(REPO, 'doc')
sys.path.insert(0, os.path.join(DOC, '_ext'))


def _sphinx(source, out, *extra):
    """Build ``source`` as HTML into ``out`` with warnings as errors; the CompletedProcess."""
    return subprocess.run([sys.executable, '-m', 'sphinx', '-W', '--keep-going', '-q', '-E',
                           '-b', 'html', *extra, source, str(out)],
                          capture_output=True, text=True, cwd=REPO)


@pytest.fixture(scope='module')
def built(tmp_path_factory):
    out = tmp_path_factory.mktemp('html')
    result = _sphinx(DOC, out)
    assert result.returncode == 0, result.stdout + result.stderr
    return out


def _text(path):
    html = path.read_text(encoding='utf-8')
    return re.sub(r'<[^>]+>', '', html).replace('&lt;', '<').replace('&gt;', '>') \
        .replace('&#39;', "'").replace('&quot;', '"')


def test_docs_build_with_warnings_as_errors(built):
    for page in ('index', 'installation', 'node_reference', 'engine', 'api', 'efforts',
                 'tools', 'benchmarks', 'robustness'):
        assert (built / f'{page}.html').is_file(), page
    api = _text(built / 'api.html')
    for path in os.listdir(os.path.join(REPO, 'ros_dynamics', 'engine')):
        if path.endswith('.py') and path != '__init__.py':
            assert f'ros_dynamics.engine.{path[:-3]}' in api, path


def test_node_reference_lists_every_parameter_with_its_range(built):
    from ros_dynamics.ros.parameters import PARAMETERS
    text = _text(built / 'node_reference.html')
    for spec in PARAMETERS:
        assert spec.name in text, spec.name
    # A range as declared: ik.max_timeout is 1e-4 to 60 [s].
    assert '0.0001 to 60' in text


def test_node_reference_lists_every_declared_topic_and_service(built):
    from ros_dynamics_reference import declared_interfaces
    declared = declared_interfaces()
    # What a reader of the code finds: the inputs, the outputs, the per-tip topics, services.
    for name in ('joint_states', 'robot_description', 'joint_trajectory', 'odom',
                 'gravity_torques', 'poses/<tip>', 'wrench_estimates/<tip>', 'collision',
                 '/diagnostics', '~/solve_ik', '~/compute_fk', '~/identify_payload'):
        assert name in declared, name
    assert declared['~/solve_ik'][0] == 'ros_dynamics_interfaces/srv/SolveIK'
    assert declared['joint_states'][:2] == ('sensor_msgs/msg/JointState', 'in')
    text = _text(built / 'node_reference.html')
    for name, (kind, _, _) in declared.items():
        assert name in text and kind in text, name


def test_a_topic_missing_from_the_reference_fails_the_build(tmp_path):
    """The drift check itself: a declared topic without a description is an error under -W."""
    (tmp_path / 'conf.py').write_text(
        f'import sys\nsys.path[:0] = [{os.path.join(DOC, "_ext")!r}, {REPO!r}]\n'
        "extensions = ['ros_dynamics_reference']\n", encoding='utf-8')
    (tmp_path / 'index.rst').write_text(
        'T\n=\n\n.. ros-interfaces::\n\n   joint_states: positions\n\n   made_up: none\n',
        encoding='utf-8')
    result = _sphinx(str(tmp_path), tmp_path / 'out')
    assert result.returncode != 0
    assert 'gravity_torques is declared in ros_dynamics/ros/output_publisher.py but not ' \
           'described' in result.stderr, result.stderr
    assert 'made_up is described in the node reference but declared nowhere' in result.stderr


@pytest.mark.parametrize('page', ['README.md', 'doc/efforts.md'])
def test_python_examples_run(page):
    """The self-contained engine examples (demo arm, no placeholders) run as written."""
    with open(os.path.join(REPO, page), encoding='utf-8') as f:
        blocks = re.findall(r'```python\n(.*?)```', f.read(), re.S)
    assert blocks, page
    for block in blocks:
        cwd = os.getcwd()
        os.chdir(REPO)                  # the examples name the demo arm relative to the checkout
        try:
            exec(compile(block, page, 'exec'), {})
        finally:
            os.chdir(cwd)


def test_readme_is_a_front_page_linking_the_docs():
    with open(os.path.join(REPO, 'README.md'), encoding='utf-8') as f:
        readme = f.read()
    assert len(readme.encode('utf-8')) < 10_000
    for command in ('make demo', 'make test', 'rosdep install', 'colcon build', 'colcon test',
                    'ros2 launch ros_dynamics ros_dynamics.launch.py'):
        assert command in readme, command
    for page in re.findall(r'\]\((doc/[^)#]+)', readme):
        assert os.path.isfile(os.path.join(REPO, page)), page
    assert 'doc/node_reference.md' in readme
