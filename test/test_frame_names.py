"""Topic tokens made from frame names (valid for any name, distinct for distinct names) and
robot_state_publisher's frame_prefix.
"""
from hypothesis import given, settings
from hypothesis import strategies as st
import pytest

from ros_dynamics.ros.frame_names import MAX_TOKEN, FramePrefix, topic_token

rclpy = pytest.importorskip('rclpy', reason='ROS 2 (rclpy) is part of make env')
from rclpy.validate_topic_name import validate_topic_name  # noqa: E402


@pytest.mark.parametrize('frame', ['tool0', 'panda_hand', 'a'])
def test_plain_names_are_kept(frame):
    assert topic_token(frame) == frame


def test_names_that_differ_give_tokens_that_differ():
    frames = ['tool/0', 'tool_0', 'tool 0', '0tool', 'f0tool', '_', '', 'x' * 300, 'x' * 301,
              'ü', 'tool_0_h' + '0' * 16, topic_token('tool/0')]
    tokens = [topic_token(f) for f in frames]
    assert len(set(tokens)) == len(frames)
    assert topic_token('tool_0') == 'tool_0' and topic_token('tool/0').startswith('tool_0_h')


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=400), st.text(max_size=400))
def test_any_name_gives_a_valid_short_token_distinct_from_others(a, b):
    for frame in (a, b):
        token = topic_token(frame)
        assert len(token) <= MAX_TOKEN
        validate_topic_name(f'/some_namespace/poses/{token}')
    if a != b:
        assert topic_token(a) != topic_token(b)


def test_frame_prefix_added_on_the_way_out_and_stripped_on_the_way_in():
    prefix = FramePrefix('left/')
    assert prefix.to_frame_id('tool0') == 'left/tool0'
    assert prefix.to_frame('left/tool0') == 'tool0' and prefix.to_frame('tool0') == 'tool0'
    assert FramePrefix('').to_frame('left/tool0') == 'left/tool0'
