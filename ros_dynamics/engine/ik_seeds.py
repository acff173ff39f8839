"""Starting points for inverse kinematics: configurations sampled once per frame, indexed by
the pose they give that frame.

A damped least-squares iteration converges in three or four steps from a configuration whose
pose is near the target, and in ten or more -- or to a local minimum -- from an arbitrary one.
So the table samples configurations uniformly inside the joint limits and computes the frame's
pose at each. Pose features are the position [m] and the rotation matrix's entries times a
length (:data:`ROTATION_LENGTH`), so that a turn by a small angle ``a`` counts like a shift of
about ``1.4 a ROTATION_LENGTH``. The positions are binned in a uniform grid (samples sorted by
cell, the cells of one grid row contiguous); a query compares the features of the samples in
the 3 x 3 x 3 cells around the target's -- a few hundred -- then of the 5 x 5 x 5 cells, then
of all samples, whichever first holds enough (targets at the edge of, or off, the sampled
workspace). NumPy only: the build costs about 20 ms for 20,000 samples of a 7-joint arm, a
query about 30 us (a few hundred us when it falls back to all samples).
"""
from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

ROTATION_LENGTH = 0.2   # [m] weight of the rotation-matrix entries against the position
_PER_CELL = 4           # samples per grid cell of the positions' bounding box, on average
_REACH = 2              # widest block searched: (2 _REACH + 1)^3 cells, then all samples
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
        # Grid over the positions, _REACH empty cells of margin on every side so that every
        # query has all its neighbours; shape (nx, ny, nz), x fastest in the cell key.
        low, span = features[:, :3].min(axis=0), np.ptp(features[:, :3], axis=0)
        self.cell = max(float(np.prod(np.maximum(span, 1e-3)) * _PER_CELL / samples)
                        ** (1.0 / 3.0), 1e-3)
        self.low = low - _REACH * self.cell
        self.shape = np.floor(span / self.cell).astype(int) + 1 + 2 * _REACH
        nx, ny, _ = self.shape
        self.strides = np.array([1, nx, nx * ny])
        #: Keys of the x-rows of the blocks of (2 r + 1)^3 cells around a cell, relative to it.
        self.rows = {r: np.array([-r + nx * (y + ny * z) for z in range(-r, r + 1)
                                  for y in range(-r, r + 1)]) for r in range(1, _REACH + 1)}
        key = np.floor((features[:, :3] - self.low) / self.cell).astype(int) @ self.strides
        order = np.argsort(key, kind='stable')
        #: (samples, m) configurations and (samples, 12) pose features, sorted by grid cell.
        self.configurations = configurations[order]
        self.features = features[order]
        #: Start of each cell's samples (and the end of the last), by cell key.
        self.starts = np.searchsorted(key[order], np.arange(np.prod(self.shape) + 1))

    def __len__(self):
        return len(self.configurations)

    def _around(self, position, r):
        """Indices of the samples in the (2 r + 1)^3 cells around ``position``'s cell (off the
        grid: around the nearest inner cell).
        """
        key = 0
        for x, low, n, stride in zip(position.tolist(), self.low.tolist(), self.shape.tolist(),
                                     self.strides.tolist()):
            key += min(max(int((x - low) // self.cell), _REACH), n - 1 - _REACH) * stride
        first = self.rows[r] + key
        start = self.starts[first]
        count = self.starts[first + 2 * r + 1] - start   # a row's x cells: consecutive keys
        # Concatenated ranges start[i] .. start[i] + count[i] without a Python loop.
        return np.arange(count.sum()) + np.repeat(start - (np.cumsum(count) - count), count)

    def nearest(self, T_target, k, position_only=False, distances=False):
        """Up to ``k`` configurations (k, m), nearest ``T_target`` (4, 4) first, among the
        samples around its position (by position alone when ``position_only``): the 3 x 3 x 3
        cells around it, else 5 x 5 x 5, else all samples -- whichever first holds ``k``.
        With ``distances``, also their squared feature distances (k,) to the target
        (:func:`pose_features`).
        """
        feature = pose_features(T_target)
        width = 3 if position_only else 12
        for r in range(1, _REACH + 1):
            index = self._around(T_target[:3, 3], r)
            if len(index) >= k:
                features = self.features[index, :width]
                break
        else:
            index, features = None, self.features[:, :width]
        diff = features - feature[:width]
        d = np.einsum('ij,ij->i', diff, diff)
        k = min(k, len(d))
        best = np.argpartition(d, k - 1)[:k] if k < len(d) else np.arange(len(d))
        best = best[np.argsort(d[best])]
        configurations = self.configurations[best if index is None else index[best]]
        return (configurations, d[best]) if distances else configurations
