"""Pinocchio, the reference implementation, set up to answer for one of our models.

Joints are matched by name; a model loaded with a root joint is compared with Pinocchio's model
built with the same root joint (a free flyer or a planar joint named ``root_joint``). Pinocchio
stores a continuous joint as (cos, sin); it treats URDF mimic joints as independent, so our
configuration is expanded to every moving joint and results are folded back with the mimic
matrix G (``tau = G^T tau_pin``, ``M = G^T M_pin G``, ``J = J_pin G``).
"""
import numpy as np
import pinocchio as pin
from scipy.spatial.transform import Rotation

ROOT_JOINTS = {None: None, 'floating': pin.JointModelFreeFlyer, 'planar': pin.JointModelPlanar}

#: Pinocchio 2.x's time variation of a frame Jacobian in LOCAL and LOCAL_WORLD_ALIGNED is not the
#: time derivative of its own frame Jacobian (errors of order 1 on panda with 2.7.0, the version
#: beside NumPy 1.26; WORLD agrees); 3.0 and later agree. With 2.x the reference there is that
#: derivative by finite differences of Pinocchio's Jacobian.
EXACT_FRAME_DJ = int(pin.__version__.split('.')[0]) >= 3


class Reference:
    def __init__(self, model, path):
        self.model = model
        root = ROOT_JOINTS[model.root_joint]
        self.pm = pin.buildModelFromUrdf(path) if root is None else \
            pin.buildModelFromUrdf(path, root())
        self.pd = self.pm.createData()
        pm = self.pm
        assert pm.nv == model.n_dof, (pm.nv, model.n_dof)
        idx_v = [pm.joints[pm.getJointId(n)].idx_v + i
                 for n, m in zip(model.moving_joint_names, model.joint_models)
                 for i in range(m.nv)]
        self.G = np.zeros((pm.nv, model.nv))
        self.G[idx_v] = model.rate_matrix()

    def q(self, q):
        out = pin.neutral(self.pm)
        q = np.asarray(q, dtype=float)
        qj = self.model.joint_positions(q)
        start = {k: iq for k, _, iq, _ in self.model.multi_dof_joints}
        for k, name in enumerate(self.model.moving_joint_names):
            j = self.pm.joints[self.pm.getJointId(name)]
            if k in start:
                out[j.idx_q:j.idx_q + j.nq] = q[start[k]:start[k] + j.nq]
            elif j.nq == 2:
                out[j.idx_q:j.idx_q + 2] = [np.cos(qj[k]), np.sin(qj[k])]
            else:
                out[j.idx_q] = qj[k]
        return out

    def v(self, qd):
        return self.G @ np.asarray(qd, dtype=float)

    def fold(self, tau):
        return self.G.T @ tau

    def fold_matrix(self, M):
        return self.G.T @ M @ self.G

    def frame_id(self, name):
        return self.pm.getFrameId(name, pin.FrameType.BODY)


def frame_jacobian_time_variation(ref, pq, pv, frame_id, convention):
    """d/dt of Pinocchio's frame Jacobian (6, nv_pin) at ``pq`` moving with ``pv``: its own
    ``getFrameJacobianTimeVariation`` (``computeJointJacobiansTimeVariation`` already run on
    ``ref.pd``), or, where 2.x gets it wrong (:data:`EXACT_FRAME_DJ`), a five-point central
    difference of ``getFrameJacobian`` along the motion (step 1e-3: error about 1e-12).
    """
    if EXACT_FRAME_DJ or convention == pin.WORLD:
        return pin.getFrameJacobianTimeVariation(ref.pm, ref.pd, frame_id, convention)
    data = ref.pm.createData()

    def jacobian(t):
        q = pin.integrate(ref.pm, pq, pv * t)
        pin.computeJointJacobians(ref.pm, data, q)
        pin.updateFramePlacements(ref.pm, data)
        return pin.getFrameJacobian(ref.pm, data, frame_id, convention)

    h = 1e-3
    return (8 * (jacobian(h) - jacobian(-h)) - (jacobian(2 * h) - jacobian(-2 * h))) / (12 * h)


def random_state(model, rng):
    """Random q within the limits (or [-pi, pi]; a random placement of floating and planar
    joints), and random qd, qdd.
    """
    q = model.random_configuration(rng)
    return q, rng.normal(size=model.nv), rng.normal(size=model.nv)


def rel_error(actual, desired):
    """Largest difference relative to the largest reference entry (at least 1)."""
    desired = np.asarray(desired, dtype=float)
    scale = max(1.0, float(np.max(np.abs(desired), initial=0.0)))
    return float(np.max(np.abs(np.asarray(actual) - desired), initial=0.0)) / scale


def rel_close(actual, desired, rtol=1e-9):
    assert np.shape(actual) == np.shape(desired), (np.shape(actual), np.shape(desired))
    error = rel_error(actual, desired)
    assert error <= rtol, f'relative error {error:.3g} > {rtol:g}'


class Arm:
    """An arm of example-robot-data: our model of it, its IK solver, and Pinocchio's model
    answering for the tip's pose.
    """

    def __init__(self, path, tip):
        from robots import load

        from ros_dynamics.engine.ik import IKSolver
        self.model, self.tip = load(path), tip
        self.solver = IKSolver(self.model)
        self.ref = Reference(self.model, path)
        self.frame = self.ref.frame_id(tip)

    def pose(self, q):
        """T_world_tip at ``q`` from Pinocchio's forward kinematics."""
        pin.framesForwardKinematics(self.ref.pm, self.ref.pd, self.ref.q(q))
        return self.ref.pd.oMf[self.frame].homogeneous.copy()

    def random_q(self, rng):
        return rng.uniform(self.model.sampling_lower, self.model.sampling_upper)

    def pose_residual(self, q, joints, T_target):
        """The tip's pose error against ``T_target`` (4, 4) as a function of the values ``x``
        of ``joints`` (indices into ``q``), the others at their values in ``q`` (nq,): the
        position error [m] and the rotation vector [rad] of Pinocchio's pose (6,), for SciPy's
        least squares and constrained minimisation.
        """
        R_target_T = T_target[:3, :3].T

        def residual(x):
            q_x = q.copy()
            q_x[joints] = x
            T_q = self.pose(q_x)
            return np.concatenate([T_q[:3, 3] - T_target[:3, 3],
                                   Rotation.from_matrix(T_q[:3, :3] @ R_target_T).as_rotvec()])
        return residual
