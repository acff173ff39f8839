"""Models beyond the dense tree-sum limit: built in linear memory (no n x n array), the same
results as the dense path (checked against Pinocchio elsewhere), the cross-algorithm
identities; long mimic chains and deep fixed chains build without recursion.
"""
import numpy as np
from pinocchio_reference import random_state, rel_close
import pytest

from ros_dynamics.engine import IKSolver, RobotModel, dof_tree

DENSE_LIMIT = dof_tree.DENSE_LIMIT

INERTIAL = ('<inertial><origin xyz="0.01 0.02 0.05"/><mass value="{m}"/><inertia ixx="0.02" '
            'ixy="0.001" ixz="0" iyy="0.03" iyz="0" izz="0.015"/></inertial>')


def chain_urdf(n, kind='revolute', mimic=False, branch_every=0):
    """A chain of n joints (every third prismatic when kind='mixed'), with side branches."""
    links = [f'<link name="l0">{INERTIAL.format(m=2.0)}</link>']
    joints = []
    parent = 'l0'
    for i in range(n):
        jtype = 'prismatic' if kind == 'mixed' and i % 3 == 2 else \
            ('fixed' if kind == 'fixed' else 'revolute')
        axis = ('0 0 1', '0 1 0', '1 0 0')[i % 3]
        m = f'<mimic joint="j{i - 1}" multiplier="0.9" offset="0.01"/>' if mimic and i else ''
        links.append(f'<link name="l{i + 1}">{INERTIAL.format(m=1.0 + 0.01 * (i % 7))}</link>')
        joints.append(f'<joint name="j{i}" type="{jtype}"><parent link="{parent}"/>'
                      f'<child link="l{i + 1}"/><origin xyz="0 0.01 0.05" rpy="0.1 0 0.2"/>'
                      f'<axis xyz="{axis}"/><limit lower="-3" upper="3" effort="1" '
                      f'velocity="1"/>{m}</joint>')
        parent = f'l{i + 1}'
        if branch_every and i % branch_every == 0:
            links.append(f'<link name="b{i}">{INERTIAL.format(m=0.5)}</link>')
            joints.append(f'<joint name="bj{i}" type="revolute"><parent link="l{i}"/>'
                          f'<child link="b{i}"/><origin xyz="0.05 0 0"/><axis xyz="0 0 1"/>'
                          '<limit lower="-1" upper="1" effort="1" velocity="1"/></joint>')
    return f'<robot name="chain">{"".join(links)}{"".join(joints)}</robot>'


@pytest.fixture(scope='module')
def large():
    """A model past the dense limit, and the same description built with dense matrices (the
    path the Pinocchio comparisons of the other tests check).
    """
    xml = chain_urdf(DENSE_LIMIT + 60, kind='mixed', branch_every=40)
    sparse = RobotModel.from_urdf_string(xml)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(dof_tree, 'DENSE_LIMIT', 10 ** 6)
        dense = RobotModel.from_urdf_string(xml)
    return sparse, dense


def test_a_large_model_keeps_no_dense_tree_matrices(large):
    model, dense = large
    assert model.n_dof > DENSE_LIMIT and dense.dof_moves_body is not None
    assert model.dof_moves_body is None and model.mimic_matrix is None
    big = [name for name, value in vars(model).items()
           if isinstance(value, np.ndarray) and value.size >= model.n_dof ** 2]
    assert big == []


def test_a_large_model_gives_the_dense_results(large):
    model, dense = large
    rng = np.random.default_rng(90)
    q, qd, qdd = random_state(model, rng)
    tip = model.frame_names[-1]
    for name, call in (('rnea', lambda m: m.inverse_dynamics(q, qd, qdd)),
                       ('gravity', lambda m: m.gravity_torques(q)),
                       ('bias', lambda m: m.bias_torques(q, qd)),
                       ('mass matrix', lambda m: m.mass_matrix(q)),
                       ('aba', lambda m: m.forward_dynamics(q, qd, qdd)),
                       ('jacobian', lambda m: m.jacobian(q, tip)),
                       ('jacobian dot', lambda m: m.jacobian_time_derivative(q, qd, tip)),
                       ('com jacobian', lambda m: m.center_of_mass_jacobian(q)),
                       ('pose', lambda m: m.frame_pose(q, tip))):
        # ABA's long recursions over 1,100 joints round differently in the last digits; so do
        # gravity's subtree first moments summed joint by joint without dense matrices (against
        # a long-double evaluation: 1.2e-10 relative on the smallest torques, dense 5e-12).
        tol = {'aba': 1e-7, 'gravity': 1e-9}.get(name, 1e-10)
        np.testing.assert_allclose(call(model), call(dense), rtol=tol, atol=tol, err_msg=name)


def test_a_large_model_passes_the_cross_algorithm_identities(large):
    model, _ = large
    rng = np.random.default_rng(91)
    q, qd, qdd = random_state(model, rng)
    zero = np.zeros(model.nv)
    tau = model.inverse_dynamics(q, qd, qdd)
    rel_close(model.forward_dynamics(q, qd, tau), qdd, rtol=1e-6)
    rel_close(model.inverse_dynamics(q, zero, zero), model.gravity_torques(q))
    M = model.mass_matrix(q)
    rel_close(M @ qdd + model.bias_torques(q, qd), tau)
    tip = model.frame_names[-1]
    eps = 1e-6
    dq = rng.normal(size=model.nv)
    T0, T1 = model.frame_pose(q - eps * dq, tip), model.frame_pose(q + eps * dq, tip)
    np.testing.assert_allclose((T1[:3, 3] - T0[:3, 3]) / (2 * eps),
                               (model.jacobian(q, tip) @ dq)[:3], rtol=1e-5, atol=1e-6)
    T = model.frame_pose(q, 'l40')
    result = IKSolver(model).solve('l40', T, q + 0.01, timeout=1.0, rng=0)
    assert result.success, result.message


def test_long_mimic_chains_and_deep_fixed_chains_build():
    mimic = RobotModel.from_urdf_string(chain_urdf(2000, mimic=True))
    assert mimic.nq == 1 and len(mimic.mimic_joint_names) == 1999
    q = np.array([0.2])
    expected = 0.2
    for _ in range(3):
        expected = 0.9 * expected + 0.01
    np.testing.assert_allclose(mimic.joint_positions(q)[3], expected)
    fixed = RobotModel.from_urdf_string(chain_urdf(10000, kind='fixed'))
    assert fixed.nq == 0 and len(fixed.frame_names) == 10001
    assert fixed.total_mass == 0.0           # everything is fixed to the base
