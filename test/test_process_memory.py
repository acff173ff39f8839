"""The process settings that give memory back after a huge input: the process restarted on the
system allocator, glibc's thresholds pinned, free pages returned, and
Fast DDS readers that free what they received unless the user configures Fast DDS.
The effect on a running node is checked in test_hostile_node.py.
"""
import os
import platform
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from ros_dynamics.ros import memory, middleware

GLIBC = pytest.mark.skipif(platform.libc_ver()[0] != 'glibc', reason='glibc only')
FASTDDS = {'RMW_FASTRTPS_USE_QOS_FROM_XML', 'FASTRTPS_DEFAULT_PROFILES_FILE',
           'FASTDDS_DEFAULT_PROFILES_FILE'}


@pytest.mark.parametrize('rmw', ['', 'rmw_fastrtps_cpp', 'rmw_fastrtps_dynamic_cpp'])
def test_fast_dds_readers_free_samples_by_default(tmp_path, rmw):
    environ = {'RMW_IMPLEMENTATION': rmw} if rmw else {}
    assert middleware.use_releasing_readers(environ, cwd=str(tmp_path))
    assert environ['RMW_FASTRTPS_USE_QOS_FROM_XML'] == '1'
    assert environ['FASTRTPS_DEFAULT_PROFILES_FILE'] == middleware.PROFILE
    assert environ['FASTDDS_DEFAULT_PROFILES_FILE'] == middleware.PROFILE
    assert os.path.isfile(middleware.PROFILE)


@pytest.mark.parametrize('setting', [
    {'RMW_IMPLEMENTATION': 'rmw_cyclonedds_cpp'},
    {'RMW_FASTRTPS_USE_QOS_FROM_XML': '0'},
    {'RMW_FASTRTPS_USE_QOS_FROM_XML': '1'},
    {'RMW_FASTRTPS_PUBLICATION_MODE': 'ASYNCHRONOUS'},
    {'FASTRTPS_DEFAULT_PROFILES_FILE': '/somewhere/mine.xml'},
    {'FASTDDS_DEFAULT_PROFILES_FILE': '/somewhere/mine.xml'},
], ids=lambda s: '='.join(next(iter(s.items()))))
def test_a_user_configuration_of_the_middleware_wins(tmp_path, setting):
    environ = dict(setting)
    assert not middleware.use_releasing_readers(environ, cwd=str(tmp_path))
    assert environ == setting


@pytest.mark.parametrize('name', middleware.USER_FILES)
def test_a_profiles_file_in_the_working_directory_wins(tmp_path, name):
    (tmp_path / name).write_text('<dds/>')
    environ = {}
    assert not middleware.use_releasing_readers(environ, cwd=str(tmp_path))
    assert environ == {}


def test_the_profile_keeps_what_rmw_fastrtps_sets_but_the_readers_memory():
    """What rmw_fastrtps sets when it is left to (participant.cpp, publisher.cpp,
    subscription.cpp on Humble and Jazzy), but readers' samples are freed when taken.
    """
    ns = {'f': 'http://www.eprosima.com/XMLSchemas/fastRTPS_Profiles'}
    profiles = ET.parse(middleware.PROFILE).getroot().find('f:profiles', ns)
    defaults = {e.tag.split('}')[1]: e for e in profiles if e.get('is_default_profile') == 'true'}
    assert set(defaults) == {'participant', 'data_writer', 'data_reader'}
    builtin = defaults['participant'].find('f:rtps/f:builtin', ns)
    assert builtin.findtext('f:readerHistoryMemoryPolicy', namespaces=ns) == \
        'PREALLOCATED_WITH_REALLOC'
    assert builtin.findtext('f:writerHistoryMemoryPolicy', namespaces=ns) == \
        'PREALLOCATED_WITH_REALLOC'
    writer, reader = defaults['data_writer'], defaults['data_reader']
    assert writer.findtext('f:qos/f:publishMode/f:kind', namespaces=ns) == 'SYNCHRONOUS'
    assert writer.findtext('f:historyMemoryPolicy', namespaces=ns) == 'PREALLOCATED_WITH_REALLOC'
    assert reader.findtext('f:historyMemoryPolicy', namespaces=ns) == 'DYNAMIC'
    for entity in (writer, reader):
        assert entity.findtext('f:qos/f:data_sharing/f:kind', namespaces=ns) == 'OFF'


def test_fast_dds_accepts_the_profile(tmp_path):
    """A publisher, a subscription, a service and a client under the profile: a message and a
    call go through, and Fast DDS's XML parser reports nothing.
    """
    pytest.importorskip('rclpy', reason='ROS 2 (rclpy) is part of make env')
    script = '''
import rclpy
from rclpy.executors import SingleThreadedExecutor
from std_msgs.msg import String
from rcl_interfaces.srv import GetParameters
rclpy.init()
node = rclpy.create_node('profile_check')
got = []
node.create_subscription(String, 'profile_check', got.append, 10)
pub = node.create_publisher(String, 'profile_check', 10)
node.create_service(GetParameters, 'profile_check_srv', lambda req, res: res)
client = node.create_client(GetParameters, 'profile_check_srv')
assert client.wait_for_service(timeout_sec=10.0)
future = client.call_async(GetParameters.Request())
executor = SingleThreadedExecutor()
executor.add_node(node)
for _ in range(200):
    pub.publish(String(data='x'))
    executor.spin_once(timeout_sec=0.05)
    if got and future.done():
        break
assert got and future.done()
print('exchanged')
'''
    environ = {k: v for k, v in os.environ.items()
               if k not in FASTDDS and k != 'RMW_FASTRTPS_PUBLICATION_MODE'}
    environ['RMW_IMPLEMENTATION'] = 'rmw_fastrtps_cpp'
    assert middleware.use_releasing_readers(environ, cwd=str(tmp_path))
    out = subprocess.run([sys.executable, '-c', script], env=environ, cwd=str(tmp_path),
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and 'exchanged' in out.stdout, out.stderr
    assert 'XMLPARSER' not in out.stderr + out.stdout
    assert 'Error' not in out.stderr, out.stderr


@GLIBC
def test_glibc_thresholds_are_pinned_unless_the_user_tuned_malloc():
    assert memory.pin_allocator_thresholds({})
    assert not memory.pin_allocator_thresholds(
        {'GLIBC_TUNABLES': 'glibc.malloc.mmap_threshold=65536'})
    assert not memory.pin_allocator_thresholds({'MALLOC_TRIM_THRESHOLD_': '1000000'})
    assert not memory.pin_allocator_thresholds({'MALLOC_ARENA_MAX': '4'})


THREAD_ARENA = '''
import sys, threading
from ros_dynamics.ros import memory
def rss_mb():
    return int(open('/proc/self/status').read().split('VmRSS:')[1].split()[0]) / 1024
if sys.argv[1] == 'pinned':
    assert memory.pin_allocator_thresholds({})
before = rss_mb()
def read_request():                  # what rclpy does with a million-frame request
    frames = [f'frame_{i}' for i in range(1_000_000)]
    del frames
thread = threading.Thread(target=read_request)
thread.start()
thread.join()
memory.release_free_memory()
print(rss_mb() - before)
'''


@GLIBC
def test_small_objects_freed_on_another_thread_are_given_back():
    """A million strings built and dropped on a thread (on the system allocator, as the node
    runs): with the allocator pinned to one arena their memory goes back to the system; left
    to glibc (an arena per thread, whose free top malloc_trim keeps) over 5 MB stay.
    """
    grown = {}
    for how in ('pinned', 'left'):
        environ = {k: v for k, v in os.environ.items()
                   if not k.startswith(('MALLOC_', 'GLIBC_TUNABLES'))}
        environ['PYTHONMALLOC'] = 'malloc'
        out = subprocess.run([sys.executable, '-c', THREAD_ARENA, how], env=environ,
                             capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        grown[how] = float(out.stdout)
    assert grown['pinned'] < 2.0 and grown['left'] > 5.0, grown

RESTART = """
import os, sys
from ros_dynamics.ros import memory
print(os.getpid(), os.environ.get('PYTHONMALLOC'), sys.argv[1:], flush=True)
memory.restart_on_system_allocator()
print('not restarted', flush=True)
"""


@GLIBC
def test_the_process_restarts_itself_on_the_system_allocator_once(tmp_path):
    script = tmp_path / 'restart.py'
    script.write_text(RESTART)
    environ = {k: v for k, v in os.environ.items() if k != 'PYTHONMALLOC'}
    out = subprocess.run([sys.executable, '-u', str(script), '--ros-args', '-p', 'a:=1'],
                         env=environ, capture_output=True, text=True, timeout=60)
    lines = out.stdout.splitlines()
    assert out.returncode == 0, out.stderr
    pid = lines[0].split()[0]
    assert lines == [f"{pid} None ['--ros-args', '-p', 'a:=1']",
                     f"{pid} malloc ['--ros-args', '-p', 'a:=1']", 'not restarted']


def test_a_user_choice_of_allocator_is_kept(tmp_path):
    script = tmp_path / 'restart.py'
    script.write_text(RESTART)
    environ = dict(os.environ, PYTHONMALLOC='pymalloc')
    out = subprocess.run([sys.executable, str(script)], env=environ, capture_output=True,
                         text=True, timeout=60)
    assert out.stdout.splitlines()[1:] == ['not restarted'], out.stderr
    assert 'pymalloc' in out.stdout


RELEASE = """
import os
from ros_dynamics.ros import memory

def resident_mb():
    with open('/proc/self/statm') as f:
        return int(f.read().split()[1]) * os.sysconf('SC_PAGE_SIZE') >> 20

before = resident_mb()
keep, junk = [], []
for i in range(1_000_000):                            # a huge input, a few survivors between
    junk.append(f'ghost_{i}')
    if i % 5000 == 0:
        keep.append(f'keep_{i}')
peak = resident_mb()
del junk
freed = resident_mb()
memory.release_free_memory()
print(before, peak, freed, resident_mb())
"""


@GLIBC
def test_free_pages_go_back_on_the_system_allocator():
    environ = dict(os.environ, PYTHONMALLOC='malloc')
    out = subprocess.run([sys.executable, '-c', RELEASE], env=environ, capture_output=True,
                         text=True, timeout=60)
    before, peak, freed, after = (int(x) for x in out.stdout.split())
    assert peak > before + 40 and freed > before + 40, out.stdout     # kept until released
    assert after < before + 8, out.stdout
