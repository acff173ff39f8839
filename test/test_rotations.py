"""Rotation parameterisations: round trips, singular edges, batches, errors."""
import numpy as np
import pytest

from ros_dynamics.engine import InvalidInputError, ShapeError
from ros_dynamics.engine import rotations as rot

RNG_SEED = 20261121


def random_rotations(n, seed=RNG_SEED):
    rng = np.random.default_rng(seed)
    q = rng.normal(size=(n, 4))
    return rot.matrix_from_quat_xyzw(q)


def assert_rotation(R):
    np.testing.assert_allclose(R @ np.swapaxes(R, -1, -2), np.broadcast_to(np.eye(3), R.shape),
                               atol=1e-12)
    np.testing.assert_allclose(np.linalg.det(R), 1.0, atol=1e-12)


def elementary(axis, angle):
    c, s = np.cos(angle), np.sin(angle)
    if axis == 'x':
        return np.array([[1, 0, 0], [0, c, -s], [0, s, c]])
    if axis == 'y':
        return np.array([[c, 0, s], [0, 1, 0], [-s, 0, c]])
    return np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]])


def test_rpy_is_fixed_axis_xyz():
    roll, pitch, yaw = 0.3, -0.7, 2.1
    expected = elementary('z', yaw) @ elementary('y', pitch) @ elementary('x', roll)
    np.testing.assert_allclose(rot.matrix_from_rpy([roll, pitch, yaw]), expected, atol=1e-15)
    np.testing.assert_allclose(rot.matrix_from_euler_zyx([yaw, pitch, roll]), expected,
                               atol=1e-15)
    zyz = elementary('z', roll) @ elementary('y', pitch) @ elementary('z', yaw)
    np.testing.assert_allclose(rot.matrix_from_euler_zyz([roll, pitch, yaw]), zyz, atol=1e-15)


@pytest.mark.parametrize('to_angles, from_angles', [
    (rot.rpy_from_matrix, rot.matrix_from_rpy),
    (rot.euler_zyx_from_matrix, rot.matrix_from_euler_zyx),
    (rot.euler_zyz_from_matrix, rot.matrix_from_euler_zyz),
    (rot.log_so3, rot.exp_so3),
    (rot.quat_xyzw_from_matrix, rot.matrix_from_quat_xyzw),
])
def test_matrix_round_trip(to_angles, from_angles):
    R = random_rotations(500)
    back = from_angles(to_angles(R))
    assert_rotation(back)
    np.testing.assert_allclose(back, R, atol=1e-12)


EDGE_ANGLES = [0.0, 1e-100, 1e-12, 1e-8, 1e-4, np.pi / 2 - 1e-10, np.pi / 2, np.pi / 2 + 1e-10,
               np.pi - 1e-6, np.pi - 1e-10, np.pi]


@pytest.mark.parametrize('pitch', [np.pi / 2, -np.pi / 2, np.pi / 2 - 1e-9, -np.pi / 2 + 1e-7,
                                   np.pi / 2 - 1e-4])
@pytest.mark.parametrize('roll, yaw', [(0.0, 0.0), (0.4, -1.2), (-2.9, 3.0)])
def test_rpy_at_gimbal_lock(pitch, roll, yaw):
    R = rot.matrix_from_rpy([roll, pitch, yaw])
    angles = rot.rpy_from_matrix(R)
    assert np.all(np.isfinite(angles))
    assert abs(angles[1]) <= np.pi / 2 + 1e-12
    np.testing.assert_allclose(rot.matrix_from_rpy(angles), R, atol=1e-12)


@pytest.mark.parametrize('b', [0.0, 1e-12, 1e-7, np.pi, np.pi - 1e-12, np.pi - 1e-7])
def test_zyz_at_singularity(b):
    R = rot.matrix_from_euler_zyz([0.8, b, -0.3])
    angles = rot.euler_zyz_from_matrix(R)
    assert 0 <= angles[1] <= np.pi
    np.testing.assert_allclose(rot.matrix_from_euler_zyz(angles), R, atol=1e-12)


@pytest.mark.parametrize('angle', EDGE_ANGLES)
def test_axis_angle_edges(angle):
    rng = np.random.default_rng(3)
    for axis in [np.array([1.0, 0, 0]), np.array([0, 0, -1.0]), rng.normal(size=3)]:
        axis = axis / np.linalg.norm(axis)
        R = rot.matrix_from_axis_angle(axis, angle)
        assert_rotation(R)
        w = rot.log_so3(R)
        assert np.linalg.norm(w) <= np.pi + 1e-12
        np.testing.assert_allclose(rot.exp_so3(w), R, atol=1e-12)
        if angle < np.pi - 1e-6:        # at pi the axis sign is free
            np.testing.assert_allclose(w, axis * angle, atol=1e-10 + 1e-9 * angle)
        back_axis, back_angle = rot.axis_angle_from_matrix(R)
        np.testing.assert_allclose(back_angle, angle, atol=1e-9)


def test_exp_so3_matches_series_near_zero():
    w = np.array([1e-9, -2e-9, 3e-9])
    K = rot.skew(w)
    np.testing.assert_allclose(rot.exp_so3(w), np.eye(3) + K + 0.5 * K @ K, atol=1e-24)


def test_quaternion_order_sign_and_normalisation():
    # 90 degrees about z: (x, y, z, w) = (0, 0, sin 45, cos 45)
    R = elementary('z', np.pi / 2)
    q = rot.quat_xyzw_from_matrix(R)
    np.testing.assert_allclose(q, [0, 0, np.sqrt(0.5), np.sqrt(0.5)], atol=1e-15)
    np.testing.assert_allclose(rot.quat_wxyz_from_xyzw(q), [np.sqrt(0.5), 0, 0, np.sqrt(0.5)])
    np.testing.assert_allclose(rot.quat_xyzw_from_wxyz(rot.quat_wxyz_from_xyzw(q)), q)
    # q and -q are the same rotation; a non-unit quaternion is normalised
    np.testing.assert_allclose(rot.matrix_from_quat_xyzw(-3.0 * q), R, atol=1e-15)
    qs = rot.quat_xyzw_from_matrix(random_rotations(300))
    assert np.all(qs[:, 3] >= 0)
    np.testing.assert_allclose(np.linalg.norm(qs, axis=-1), 1.0, atol=1e-15)


@pytest.mark.parametrize('bad', [[0, 0, 0, 0], [np.nan, 0, 0, 1], [0, np.inf, 0, 1]])
def test_bad_quaternion_raises(bad):
    with pytest.raises(InvalidInputError, match='quat_xyzw'):
        rot.matrix_from_quat_xyzw(bad)


def test_shape_errors_name_the_argument():
    with pytest.raises(ShapeError, match=r'rpy: expected shape \(\.\.\., 3\), got \(4,\)'):
        rot.matrix_from_rpy([1, 2, 3, 4])
    with pytest.raises(ShapeError, match='R: expected shape'):
        rot.log_so3(np.eye(4))
    with pytest.raises(InvalidInputError, match='non-zero'):
        rot.matrix_from_axis_angle([0, 0, 0], 1.0)


def test_batches_keep_their_leading_shape():
    R = random_rotations(24).reshape(2, 3, 4, 3, 3)
    assert rot.rpy_from_matrix(R).shape == (2, 3, 4, 3)
    assert rot.quat_xyzw_from_matrix(R).shape == (2, 3, 4, 4)
    assert rot.log_so3(R).shape == (2, 3, 4, 3)
    looped = np.array([rot.log_so3(r) for r in R.reshape(-1, 3, 3)]).reshape(2, 3, 4, 3)
    np.testing.assert_array_equal(rot.log_so3(R), looped)


def test_no_floating_point_warnings_at_edges():
    R = np.stack([rot.matrix_from_axis_angle([0, 1, 0], a) for a in EDGE_ANGLES])
    with np.errstate(all='raise'):
        for f in (rot.log_so3, rot.rpy_from_matrix, rot.euler_zyz_from_matrix,
                  rot.quat_xyzw_from_matrix):
            f(R)
        rot.exp_so3(np.zeros(3))


def test_skew_and_unskew():
    v, u = np.array([1.0, -2.0, 0.5]), np.array([0.3, 0.1, -4.0])
    np.testing.assert_allclose(rot.skew(v) @ u, np.cross(v, u))
    np.testing.assert_allclose(rot.unskew(rot.skew(v)), v)


@pytest.mark.parametrize('axis', [(0, 0, 1), (0, 0, -1), (1, 0, 0), (0, -1, 0),
                                  (0.6, 0.0, -0.8), (1e-14, 0.0, -1.0), (0.3, -0.4, 0.866)])
def test_matrix_z_to_turns_z_onto_the_axis(axis):
    a = np.asarray(axis, dtype=float) / np.linalg.norm(axis)
    R = rot.matrix_z_to(a)
    np.testing.assert_allclose(R @ [0.0, 0.0, 1.0], a, atol=1e-12)
    np.testing.assert_allclose(R @ R.T, np.eye(3), atol=1e-12)
    assert np.isclose(np.linalg.det(R), 1.0)
