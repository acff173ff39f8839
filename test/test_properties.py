"""Property-based tests (hypothesis) of the engine's public functions: valid inputs give finite
results of the right shapes; invalid inputs raise the engine's typed errors and nothing else.
"""
import re
import warnings

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
import numpy as np
import pytest
from robots import DEMO_ARM, TREE_URDF

from ros_dynamics.engine import DynamicsError, IKSolver, RobotModel, mass_properties
from ros_dynamics.engine import rotations as rot

SETTINGS = settings(max_examples=60, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])
MODEL = RobotModel.from_urdf_file(DEMO_ARM)
with warnings.catch_warnings():
    warnings.simplefilter('ignore')
    TREE = RobotModel.from_urdf_string(TREE_URDF)

finite = st.floats(-20, 20, allow_nan=False, allow_infinity=False)
# Includes NaN, Inf and huge magnitudes.
anything = st.one_of(st.floats(allow_nan=True, allow_infinity=True), finite)


@SETTINGS
@given(arrays(float, 3, elements=finite))
def test_rpy_round_trip(rpy):
    R = rot.matrix_from_rpy(rpy)
    np.testing.assert_allclose(R @ R.T, np.eye(3), atol=1e-12)
    np.testing.assert_allclose(rot.matrix_from_rpy(rot.rpy_from_matrix(R)), R, atol=1e-10)


@SETTINGS
@given(arrays(float, 4, elements=finite))
def test_quaternions_give_rotations_or_a_typed_error(q):
    if np.linalg.norm(q) < 1e-9:
        with pytest.raises(DynamicsError):
            rot.matrix_from_quat_xyzw(q)
        return
    R = rot.matrix_from_quat_xyzw(q)
    np.testing.assert_allclose(R @ R.T, np.eye(3), atol=1e-12)
    back = rot.quat_xyzw_from_matrix(R)
    assert np.allclose(back, q / np.linalg.norm(q)) or np.allclose(back, -q / np.linalg.norm(q))


@SETTINGS
@given(st.sampled_from([MODEL, TREE]), st.data())
def test_model_functions_on_valid_states_are_finite(model, data):
    n = model.nq
    q, qd, qdd = (data.draw(arrays(float, n, elements=finite)) for _ in range(3))
    frame = data.draw(st.sampled_from(model.frame_names))
    outputs = [model.frame_pose(q, frame), model.jacobian(q, frame, 'local'),
               model.frame_twist(q, qd, frame), model.frame_acceleration(q, qd, qdd, frame),
               model.inverse_dynamics(q, qd, qdd), model.gravity_torques(q),
               model.mass_matrix(q), model.coriolis_matrix(q, qd),
               model.kinetic_energy(q, qd), model.center_of_mass(q)]
    for out in outputs:
        assert np.all(np.isfinite(out))
    M = model.mass_matrix(q)
    assert M.shape == (n, n) and np.allclose(M, M.T)
    qdd_fd = model.forward_dynamics(q, qd, model.inverse_dynamics(q, qd, qdd))
    assert np.all(np.isfinite(qdd_fd))


@SETTINGS
@given(st.data())
def test_model_functions_on_invalid_input_raise_typed_errors(data):
    n = MODEL.nq
    length = data.draw(st.integers(0, 9))
    q = data.draw(arrays(float, length, elements=anything))
    frame = data.draw(st.one_of(st.sampled_from(MODEL.frame_names), st.text(max_size=8)))
    q_ok = length == n and bool(np.all(np.abs(q) <= 1e100))
    frame_ok = frame in MODEL.frame_names
    calls = ((lambda: MODEL.frame_pose(q, frame), q_ok and frame_ok),
             (lambda: MODEL.gravity_torques(q), q_ok),
             (lambda: MODEL.jacobian(q, frame), q_ok and frame_ok),
             (lambda: MODEL.inverse_dynamics(q, q, q), q_ok),
             (lambda: IKSolver(MODEL).solve(frame, np.eye(4), q, timeout=0.001), q_ok and frame_ok))
    for call, valid in calls:
        try:
            out = call()
        except DynamicsError as err:
            assert not valid, f'a valid input was refused: {err}'
            continue
        assert valid, 'an invalid input was accepted'
        values = out.q if hasattr(out, 'q') else out
        assert np.all(np.isfinite(values))


@SETTINGS
@given(arrays(float, 3, elements=st.floats(0.01, 3.0)), arrays(float, 3, elements=finite),
       arrays(float, 3, elements=st.floats(-100, 100)))
def test_mass_properties_of_moved_boxes_are_physical(extents, rotation, translation):
    import trimesh
    box = trimesh.creation.box(extents=extents)
    R = rot.exp_so3(rotation)
    mp = mass_properties(np.asarray(box.vertices) @ R.T + translation, box.faces)
    assert mp.mass == pytest.approx(1000 * np.prod(extents), rel=1e-9)
    I1, I2, I3 = mp.principal_moments
    assert I1 > 0 and I1 + I2 >= I3 * (1 - 1e-9)
    np.testing.assert_allclose(mp.com, translation, atol=1e-9 * (1 + np.abs(translation).max()))


VALID = open(DEMO_ARM).read()


@SETTINGS
@given(st.integers(0, len(VALID) - 1), st.integers(1, 40),
       st.sampled_from(['', 'x', '"', '<', '>', ' nan ', '-1e400', '</link>', '<joint>']))
def test_mutated_urdf_loads_or_raises_a_urdf_error(start, length, insert):
    text = VALID[:start] + insert + VALID[start + length:]
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        try:
            model = RobotModel.from_urdf_string(text)
        except DynamicsError as err:
            assert str(err)
            return
    assert model.nq >= 0 and re.match(r'\w', model.root_link)
