"""Starting points for inverse kinematics: configurations sampled once per frame, indexed by
the pose they give that frame.

A damped least-squares iteration converges in three or four steps from a configuration whose
pose is near the target, and in ten or more -- or to a local minimum -- from an arbitrary one.
So the table samples configurations uniformly inside the joint limits and computes the frame's
pose at each. Pose features are the position [m] and the rotation matrix's entries times a
length (:data:`ROTATION_LENGTH`), so that a turn by a small angle ``a`` counts like a shift of
about ``1.4 a ROTATION_LENGTH``. SciPy's k-d trees over the features (and over the positions
alone) give the samples nearest a target exactly: the build costs about 25 ms for 20,000
samples of a 7-joint arm, a query 10-25 us.
"""
from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike
from scipy.spatial import cKDTree

ROTATION_LENGTH = 0.2   # [m] weight of the rotation-matrix entries against the position
_CHUNK = 1024           # configurations per forward-kinematics batch while building


def pose_features(T: ArrayLike):
    """Features (..., 12) of poses (..., 4, 4): the position, then ROTATION_LENGTH times the
    rotation matrix's entries (row-major).
    """
    T = np.asarray(T)
    return np.concatenate([T[..., :3, 3], ROTATION_LENGTH * T[..., :3, :3].reshape(
        T.shape[:-2] + (9,))], axis=-1)


def feature_distance2(T, T_target):
    """The squared distance between the :func:`pose_features` of ``T`` and ``T_target`` (4, 4
    each), without forming them.
    """
    D = (T - T_target)[:3]
    p, R = D[:, 3], D[:, :3].ravel()
    return float(p.dot(p) + ROTATION_LENGTH ** 2 * R.dot(R))


class SeedTable:
    """``samples`` (>= 1) configurations of the joints that move one frame (``chain.moved``),
    drawn uniformly from ``[lower, upper]`` (m,), and the frame's poses at them.
    """

    def __init__(self, chain, lower, upper, samples, rng):
        configurations = rng.uniform(lower, upper, size=(samples, len(lower)))
        features = np.empty((samples, 12))
        for i in range(0, samples, _CHUNK):     # in chunks: small temporaries, small heap
            features[i:i + _CHUNK] = pose_features(chain.poses(configurations[i:i + _CHUNK]))
        #: (samples, m) configurations and (samples, 12) their pose features.
        self.configurations = configurations
        self.features = features
        # Trees over the features and over the positions alone (position-only queries).
        self._trees = {12: cKDTree(features, copy_data=False),
                       3: cKDTree(np.ascontiguousarray(features[:, :3]), copy_data=False)}

    def __len__(self):
        return len(self.configurations)

    def nearest(self, T_target, k, position_only=False, distances=False):
        """Up to ``k`` configurations (k, m), nearest ``T_target`` (4, 4) first by the distance
        of their :func:`pose_features` (of their positions alone when ``position_only``).
        With ``distances``, also their squared feature distances (k,) to the target.
        """
        width = 3 if position_only else 12
        k = min(k, len(self.configurations))
        d, index = self._trees[width].query(pose_features(T_target)[:width], k)
        configurations = self.configurations[np.atleast_1d(index)]
        return (configurations, np.atleast_1d(d) ** 2) if distances else configurations
