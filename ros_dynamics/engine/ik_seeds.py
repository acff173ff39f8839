"""Starting points for inverse kinematics: configurations sampled once per frame, indexed by
the pose they give that frame.

A damped least-squares iteration converges in two or three steps from a configuration whose
pose is near the target, and in ten or more -- or to a local minimum -- from an arbitrary one.
So the table samples configurations uniformly inside the joint limits, computes the frame's
pose for each, and keeps a k-d tree (``scipy.spatial.cKDTree``) over pose features: the
position [m] and the rotation matrix's entries times a length (:data:`ROTATION_LENGTH`), so
that a rotation by a small angle ``a`` counts like a shift of about ``1.4 a ROTATION_LENGTH``.
Position-only searches use a second tree over positions alone. The build is a one-time cost
per frame (about 0.1 s for 20,000 samples); a query costs tens of microseconds.
"""
import numpy as np
from scipy.spatial import cKDTree

ROTATION_LENGTH = 0.2   # [m] weight of the rotation-matrix entries against the position
_APPROXIMATION = 1.0    # k-d tree ``eps``: neighbours within (1 + eps) of the true distance
_CHUNK = 4096           # configurations per forward-kinematics batch while building


class SeedTable:
    """``samples`` configurations of the joints that move one frame (``chain.moved``), drawn
    uniformly from ``[lower, upper]`` (m,), and the frame's poses at them.
    """

    def __init__(self, chain, lower, upper, samples, rng):
        if samples < 1:
            raise ValueError(f'samples: expected >= 1, got {samples}')
        self.configurations = rng.uniform(lower, upper, size=(samples, len(lower)))
        poses = np.concatenate([chain.poses(self.configurations[i:i + _CHUNK])
                                for i in range(0, samples, _CHUNK)])
        self.positions = np.ascontiguousarray(poses[:, :3, 3])
        self.tree = cKDTree(np.concatenate(
            [self.positions, ROTATION_LENGTH * poses[:, :3, :3].reshape(samples, 9)], axis=1))
        self._position_tree = None

    def __len__(self):
        return len(self.configurations)

    def nearest(self, T_target, k, position_only=False):
        """Up to ``k`` configurations (k, m) whose poses are nearest ``T_target`` (4, 4),
        nearest first; by position alone when ``position_only``.
        """
        k = min(k, len(self))
        if position_only:
            if self._position_tree is None:
                self._position_tree = cKDTree(self.positions)
            tree, feature = self._position_tree, T_target[:3, 3]
        else:
            tree = self.tree
            feature = np.concatenate([T_target[:3, 3], ROTATION_LENGTH * T_target[:3, :3].ravel()])
        _, index = tree.query(feature, k=k, eps=_APPROXIMATION)
        return self.configurations[np.atleast_1d(index)]
