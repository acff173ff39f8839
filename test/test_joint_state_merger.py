"""Joint-state validation and merging (the node's first step), without ROS."""
import numpy as np
import pytest

from ros_dynamics.ros.joint_state_merger import InvalidJointState, JointStateMerger

NAMES = ('a', 'b', 'c')


def test_partial_messages_merge_by_name_and_empty_velocity_means_zero():
    m = JointStateMerger(NAMES, ignored_names=('mimic',))
    assert m.update(['b', 'a'], [2.0, 1.0], [0.2, 0.1]) == []
    assert not m.complete
    assert m.update(['c', 'mimic'], [3.0, 9.0], []) == []
    assert m.complete
    np.testing.assert_array_equal(m.q, [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(m.qd, [0.1, 0.2, 0.0])


@pytest.mark.parametrize('names, positions, velocities, match', [
    (['a', 'b'], [1.0], [], '2 names but 1 positions'),
    (['a'], [], [], '1 names but 0 positions'),
    (['a', 'b'], [1.0, 2.0], [1.0], 'expected 0 or one per name'),
    (['a'], [float('nan')], [], r"non-finite position for \['a'\]"),
    (['a'], [float('inf')], [], 'non-finite position'),
    (['a'], [1.0], [float('nan')], 'non-finite velocity'),
])
def test_bad_messages_are_dropped_and_change_nothing(names, positions, velocities, match):
    m = JointStateMerger(NAMES)
    m.update(['a', 'b', 'c'], [1.0, 2.0, 3.0], [])
    with pytest.raises(InvalidJointState, match=match):
        m.update(names, positions, velocities)
    np.testing.assert_array_equal(m.q, [1.0, 2.0, 3.0])


def test_unknown_names_are_reported_and_ignored():
    m = JointStateMerger(NAMES)
    assert m.update(['x', 'y'], [1.0, 2.0], []) == ['x', 'y']      # unknown names only
    assert not m.received.any()
    assert m.update(['x', 'a'], [float('nan'), 5.0], []) == ['x']  # NaN on an ignored name
    assert m.q[0] == 5.0


def test_a_huge_message_is_handled():
    m = JointStateMerger(NAMES)
    names = [f'j{i}' for i in range(10_000)] + list(NAMES)
    unknown = m.update(names, np.arange(len(names), dtype=float), [])
    assert len(unknown) == 10_000 and m.complete
    np.testing.assert_array_equal(m.q, [10_000, 10_001, 10_002])
