"""Pinocchio, the reference implementation, set up to answer for one of our models.

Joints are matched by name. Pinocchio stores a continuous joint as (cos, sin); it treats URDF
mimic joints as independent, so our configuration is expanded to every moving joint and results
are folded back with the mimic matrix G
(``tau = G^T tau_pin``, ``M = G^T M_pin G``, ``J = J_pin G``).
"""
import numpy as np
import pinocchio as pin


class Reference:
    def __init__(self, model, path):
        self.model = model
        self.pm = pin.buildModelFromUrdf(path)
        self.pd = self.pm.createData()
        pm = self.pm
        idx_v = [pm.joints[pm.getJointId(n)].idx_v for n in model.moving_joint_names]
        assert pm.nv == model.n_moving, (pm.nv, model.n_moving)
        self.G = np.zeros((pm.nv, model.nq))
        self.G[idx_v] = model.mimic_matrix

    def q(self, q):
        out = pin.neutral(self.pm)
        qj = self.model.joint_positions(np.asarray(q, dtype=float))
        for k, name in enumerate(self.model.moving_joint_names):
            j = self.pm.joints[self.pm.getJointId(name)]
            if j.nq == 2:
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


def random_state(model, rng):
    """Random q within the limits (or [-pi, pi]), and random qd, qdd."""
    lo = np.where(np.isfinite(model.lower_limits), model.lower_limits, -np.pi)
    hi = np.where(np.isfinite(model.upper_limits), model.upper_limits, np.pi)
    q = rng.uniform(lo, hi)
    return q, rng.normal(size=model.nq), rng.normal(size=model.nq)
