"""Starting points for inverse kinematics: configurations sampled once per frame, indexed by
the pose they give that frame.

A damped least-squares iteration converges in three or four steps from a configuration whose
pose is near the target, and in ten or more -- or to a local minimum -- from an arbitrary one.
So the table samples configurations uniformly inside the joint limits and computes the frame's
pose and the Jacobian's damped pseudo-inverse at each: :meth:`SeedTable.starts` moves the
nearest samples by one damped least-squares step toward the target from those, so a search's
rows start a step ahead without evaluating the chain (on Baxter's arm, 2.9 iterations to 1e-5
instead of 4.0). Pose features are the position [m] and the rotation matrix's entries times a
length (:data:`ROTATION_LENGTH`), so that a turn by a small angle ``a`` counts like a shift of
about ``1.4 a ROTATION_LENGTH``. SciPy's k-d trees over the features (and over the positions
alone) give the samples nearest a target exactly: the build costs about 60 ms for 20,000
samples of a 7-joint arm, a query 10-25 us in a tight loop and 30-70 us inside a solve (caches
cold; the samples are stored in the tree's leaf order). The pseudo-inverses are kept in single
precision (a step's direction needs no more): 12 + 7 m doubles and 6 m floats per sample of m
joints.
"""
from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike
from scipy.spatial import cKDTree

ROTATION_LENGTH = 0.2   # [m] weight of the rotation-matrix entries against the position
_CHUNK = 1024           # configurations per forward-kinematics batch while building
#: Samples per leaf of the k-d trees. Inside a solve (caches cold) a query of 4 among 20,000
#: samples of xArm7 took 49 us with SciPy's default of 16, 28-36 us with 64.
_LEAF = 64
#: Damping of the stored pseudo-inverses: the search's (``0.1 e^T e / 2``) for errors of about
#: 5 cm and 0.3 rad, the nearest samples' on a 7-joint arm with 20,000 of them.
STEP_DAMPING = 5e-3
#: Queries are approximate: the k-th sample returned is at most ``1 + QUERY_EPS`` times as far as
#: the true k-th nearest (SciPy's ``eps``). On Baxter's arm the nearest came out 0.2 % farther
#: on average, for a query of 16 us instead of 23 (warm); held-joint arms solve 4-9 % sooner.
QUERY_EPS = 1.0
#: The neighbour whose distance :attr:`SeedTable.spacing2` bounds (the fourth, as
#: ``ik_answers.NEAR_RANK``) ...
SPACING_RANK = 4
#: ... over this many samples (about 3 ms to build).
_SPACING_PROBES = 256


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
        steps = np.empty((samples, len(lower), 6), dtype=np.float32)
        for i in range(0, samples, _CHUNK):     # in chunks: small temporaries, small heap
            T, JT = chain.evaluate(configurations[i:i + _CHUNK])
            features[i:i + _CHUNK] = pose_features(T)
            # The damped pseudo-inverse J^T (J J^T + lambda I)^-1 = (G^-1 J)^T, G = J J^T + ...
            G = JT.transpose(0, 2, 1) @ JT
            G.reshape(len(G), 36)[:, ::7] += STEP_DAMPING
            steps[i:i + _CHUNK] = np.linalg.solve(G, JT.transpose(0, 2, 1)).transpose(0, 2, 1)
        # The samples in the order of a k-d tree's leaves: a query then reads a few runs of
        # nearby memory, not samples scattered over the table (caches are cold inside a
        # solve: Panda and xArm7 answer 2-6 % sooner, for 10 ms more to build).
        order = cKDTree(features, leafsize=_LEAF).indices
        configurations, features, steps = configurations[order], features[order], steps[order]
        #: (samples, m) configurations, (samples, 12) their pose features and (samples, m, 6)
        #: the damped pseudo-inverses of the frame's Jacobian there (single precision).
        self.configurations = configurations
        self.features = features
        self.steps = steps
        # Trees over the features and over the positions alone (position-only queries).
        self._trees = {12: cKDTree(features, leafsize=_LEAF, copy_data=False),
                       3: cKDTree(np.ascontiguousarray(features[:, :3]), leafsize=_LEAF,
                                  copy_data=False)}
        #: A bound on the squared feature distance from a pose to its :data:`SPACING_RANK`-th
        #: nearest sample: the 99th percentile of it over :data:`_SPACING_PROBES` samples
        #: (their own distance left out); 0 for a table too small to tell.
        self.spacing2 = 0.0
        if samples > SPACING_RANK:
            probes = features[rng.integers(0, samples, size=min(_SPACING_PROBES, samples))]
            d, _ = self._trees[12].query(probes, SPACING_RANK + 1, eps=QUERY_EPS)
            self.spacing2 = float(np.percentile(d[:, -1] ** 2, 99))

    def __len__(self):
        return len(self.configurations)

    def nearest(self, T_target, k, position_only=False, distances=False):
        """Up to ``k`` configurations (k, m), nearest ``T_target`` (4, 4) first by the distance
        of their :func:`pose_features` (of their positions alone when ``position_only``).
        With ``distances``, also their squared feature distances (k,) to the target.
        """
        width = 3 if position_only else 12
        k = min(k, len(self.configurations))
        d, index = self._trees[width].query(pose_features(T_target)[:width], k, eps=QUERY_EPS)
        configurations = self.configurations[np.atleast_1d(index)]
        return (configurations, np.atleast_1d(d) ** 2) if distances else configurations

    def starts(self, error, T_target, k, distances=False):
        """Starting points (k, m) for a search of ``T_target`` (4, 4), whose
        :class:`~ros_dynamics.engine.ik_search.PoseError` is ``error``: the ``k`` samples
        nearest it (as :meth:`nearest`), each moved by one damped least-squares step from its
        stored pose and pseudo-inverse (the rotation error's sine for its angle: the same for
        the nearest samples, within 4 % up to 0.5 rad). Not clipped into the limits. With
        ``distances``, also the samples' squared feature distances (k,) to the target.
        """
        k = min(k, len(self.configurations))
        d, index = self._trees[12].query(pose_features(T_target), k, eps=QUERY_EPS)
        index = np.atleast_1d(index)
        e = error.of_features(self.features[index], ROTATION_LENGTH)
        X = self.configurations[index] + (self.steps[index] @ e[:, :, None])[..., 0]
        return (X, np.atleast_1d(d) ** 2) if distances else X
