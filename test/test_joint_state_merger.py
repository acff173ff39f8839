"""Joint-state validation and merging (the node's first step), without ROS."""
import numpy as np
import pytest

from ros_dynamics.ros.joint_state_merger import InvalidJointState, JointStateMerger

NAMES = ('a', 'b', 'c')


def test_partial_messages_merge_by_name_and_empty_velocity_means_zero():
    m = JointStateMerger(NAMES, ignored_names=('mimic',))
    assert m.update(['b', 'a'], [2.0, 1.0], [0.2, 0.1]) == (0, [])
    assert not m.complete and m.heard_any and m.never_heard() == ['c']
    assert m.update(['c', 'mimic'], [3.0, 9.0], []) == (0, [])
    assert m.complete
    np.testing.assert_array_equal(m.q, [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(m.qd, [0.1, 0.2, 0.0])


@pytest.mark.parametrize('names, positions, velocities, match', [
    (['a', 'b'], [1.0], [], '2 names but 1 positions'),
    (['a'], [], [], '1 names but 0 positions'),
    (['a', 'b'], [1.0, 2.0], [1.0], 'expected 0 or one per name'),
    (['a'], [float('nan')], [], r"position NaN, Inf or beyond 1e\+100 for \['a'\]"),
    (['a'], [float('inf')], [], 'position NaN, Inf'),
    (['a', 'b'], [1.0, 1e300], [], r"position NaN, Inf or beyond 1e\+100 for \['b'\]"),
    (['a'], [1.0], [float('nan')], 'velocity NaN'),
    (['a'], [1.0], [-1e101], 'velocity NaN, Inf or beyond'),
    (['a', 'b', 'a'], [1.0, 2.0, 3.0], [], r"joints named more than once: \['a'\]"),
    (['x', 'x'], [1.0, 2.0], [], 'joints named more than once'),
])
def test_bad_messages_are_dropped_and_change_nothing(names, positions, velocities, match):
    m = JointStateMerger(NAMES)
    m.update(['a', 'b', 'c'], [1.0, 2.0, 3.0], [])
    with pytest.raises(InvalidJointState, match=match):
        m.update(names, positions, velocities)
    np.testing.assert_array_equal(m.q, [1.0, 2.0, 3.0])


def test_unknown_names_are_reported_and_ignored():
    m = JointStateMerger(NAMES)
    assert m.update(['x', 'y'], [1.0, 2.0], []) == (2, ['x', 'y'])    # unknown names only
    assert not m.received.any() and not m.heard_any
    assert m.update(['x', 'a'], [float('nan'), 5.0], []) == (1, ['x'])  # NaN on an ignored name
    assert m.q[0] == 5.0


def test_a_huge_message_is_handled():
    m = JointStateMerger(NAMES)
    names = [f'j{i}' for i in range(10_000)] + list(NAMES)
    unknown = m.update(names, np.arange(len(names), dtype=float), [])
    assert unknown[0] == 10_000 and len(unknown[1]) == 10 and m.complete
    np.testing.assert_array_equal(m.q, [10_000, 10_001, 10_002])
    assert not m._cache                      # a list that long is not cached


def test_the_cache_of_name_lists_stays_bounded():
    m = JointStateMerger(NAMES)
    for i in range(1000):
        m.update([f'unknown_{i}', 'a'], [0.0, 1.0], [])
    assert len(m._cache) <= 64


def test_joints_never_heard_of_keep_their_defaults_until_heard():
    m = JointStateMerger(NAMES, initial_q=[0.5, 0.0, -0.5])
    m.update(['b'], [2.0], [])
    np.testing.assert_array_equal(m.q, [0.5, 2.0, -0.5])
    m.set_defaults([1.0, 1.0, 1.0])
    np.testing.assert_array_equal(m.q, [1.0, 2.0, 1.0])
