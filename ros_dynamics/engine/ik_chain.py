"""The kinematic chain of one frame: its pose and Jacobian from the joints that move it, for a
batch of configurations -- what every IK iteration needs, without the rest of the tree.

Joint k of the chain is the constant placement ``C_k`` of its z-aligned frame in the previous
joint's (``Model.joint_z_placement``; the world frame for the first) followed by its joint
model's transform ``Z_k(x)`` (:mod:`.joints`), linear in ``[cos x, sin x, 1, x]``; the frame hangs
at ``E`` from the last. Below a floating or planar joint (a floating base) the chain starts at
the body that joint moves, :attr:`Chain.root_body`: the IK moves the one-DOF joints only and
holds that joint where the seed puts it, so poses of the chain are in that body's frame.
``C_k Z_k(x)`` is those four terms times a constant basis (one matrix product for every joint and
configuration), and the frames chain by products.
"""
import math

import numpy as np

from .joints import X as X_TERM

_TWO_PI = 2.0 * np.pi
_INF = math.inf
#: A solution this far [rad or m] outside a joint limit is inside after rounding (a whole turn
#: added to an angle at the limit) and is clipped in.
LIMIT_SLACK = 1e-9
#: [rad] A turning joint whose limits are this far from zero or farther on both sides (URDFs
#: write "unlimited" as 1e16) is unbounded for the IK: its seed's angle is solved within a turn
#: of zero and the answer moved back -- a double holds an angle of 1e12 rad only to 1.2e-4,
#: and a seed of 1e12 on such a joint was answered success=True with the tip 1.2e-5 off, of
#: 1e15 1 cm off -- and its random starting points come from one turn. Real multi-turn joints
#: have at most hundreds of turns; at 1e6 rad a double holds the angle to 1.2e-10.
UNLIMITED = 1e6
#: A closed-form solution this far [rad] past a limit is clipped in when the chain confirms it
#: within the tolerances (one solve: where none is inside, and not a snapped geometry's, whose
#: candidates are polished only to the tolerance; a path: always): a subproblem at a
#: tangency turns a rounding ``d`` into about ``sqrt(2 d)`` (an arccos near 1: human.urdf's leg
#: with four joints at their limits came out 5e-9 past; SO-100's elbow folded at its stop,
#: 1.5e-7).
TANGENT_SLACK = 1e-6
# Flattened 4x4 entries (row-major): the z axis and the origin of a frame, rotated by one
# and by two places -- the factors of the cross product z x (p_tip - p) -- and the z axis.
_Z_AND_P = np.array([6, 10, 2, 10, 2, 6, 11, 3, 7, 7, 11, 3, 2, 6, 10])
_P_ROTATED = np.array([11, 3, 7, 7, 11, 3])


def whole_turns(model):
    """Per coordinate of ``q`` (nq,): whether a whole turn of it leaves every joint's transform
    as it is -- an angle, and every mimic joint following it an angle with a whole-number
    multiplier (a turn moves it by whole turns too).
    """
    turns = np.array(model.angular_joints, dtype=bool)
    for k, joint in enumerate(model.joint_models):
        if joint.nq == 1 and not (joint.angular_coordinates[0]
                                  and float(model.joint_multiplier[k]).is_integer()):
            turns[model.joint_q_source[k]] = False
    return turns


def turn_into_limits(x, seed, lower, upper, slack):
    """The angle ``x`` [rad] moved by the whole turns nearest ``seed`` [rad] that keep it
    within ``[lower - slack, upper + slack]`` (floats; an infinite limit: none on that side),
    or None when no whole turn does -- the rule every solution's angle is turned by, a seed
    many turns outside the limits too.
    """
    k = round((seed - x) / _TWO_PI)
    if lower > -_INF:
        k_lower = math.ceil((lower - slack - x) / _TWO_PI)
        k = k_lower if k_lower > k else k
    if upper < _INF:
        k_upper = math.floor((upper + slack - x) / _TWO_PI)
        k = k_upper if k_upper < k else k
    v = x + k * _TWO_PI
    return v if lower - slack <= v <= upper + slack else None


class Chain:
    """Pose and root-aligned Jacobian of ``frame`` of ``model`` for batches of configurations
    of the one-DOF joints that move it (see the module docstring). Immutable once built, but
    for the last seed's frames it keeps (:meth:`seed_frames`).
    """

    def __init__(self, model, frame):
        f = model.frame_index(frame)
        #: The frame's name.
        self.frame = model.frame_names[f]
        joints = model.joints_moving_body(model.frame_body[f])                  # root first
        multi = [k for k in joints if model.joint_models[k].nq > 1]
        #: The body the chain starts from (0, the world, unless a multi-DOF joint moves the
        #: frame: then the body the last one moves); :meth:`evaluate` gives poses in its frame.
        self.root_body = multi[-1] + 1 if multi else 0
        joints = joints[joints >= self.root_body]
        n = len(joints)
        C = model.joint_z_placement[joints]
        Z = np.array([model.joint_models[k].transform_terms for k in joints]).reshape(n, 4, 4, 4)
        #: (n, 4, 16): the transform C_k Z_k(x) is [cos x, sin x, 1, x] times basis[k].
        self.basis = (C[:, None] @ Z).reshape(n, 4, 16)
        self.uses_x_term = bool(np.any(self.basis[:, X_TERM]))
        E = np.array(model.frame_placement[f])
        if n:
            A = model.joint_z_rotation[joints[-1]]
            E[:3] = A.T @ E[:3]
        #: T_lastz_frame (4, 4): the frame in the last joint's z-aligned frame.
        self.frame_placement = E
        self._last_seed = (None, None)         # (x.tobytes(), its frames): seed_frames
        motion = np.array([model.joint_models[k].motion_z for k in joints]).reshape(n, 6)
        #: Per joint, how much its z axis is its angular and its linear motion (1 or 0).
        self.angular = motion[:, 5, None]
        self.linear = motion[:, 2, None]
        self.pure_rotation = bool(np.all(self.angular == 1.0) and np.all(self.linear == 0.0))
        q_index = model.joint_q_source[joints]
        self.multiplier = model.joint_multiplier[joints]
        self.offset = model.joint_offset[joints]
        columns = model.rate_matrix(model.joint_dof_start[joints])     # chain joint rates from v
        # Chains without mimic joints read their joints' q directly.
        self.mimic = not (np.all(self.multiplier == 1.0) and np.all(self.offset == 0.0)
                          and len(set(q_index.tolist())) == n)
        moved_v = np.flatnonzero(columns.any(axis=0))
        q_of_v = np.zeros(model.nv, dtype=int)
        q_of_v[model.actuated_v_index] = model.actuated_q_index
        #: Indices in ``q`` of the independent joints that move the frame, in the order of the
        #: Jacobian's columns.
        self.moved = q_of_v[moved_v] if self.mimic else q_index
        self.x_index = np.searchsorted(self.moved, q_index) if self.mimic else None
        self.mimic_rows = columns[:, moved_v].T.copy()             # (m, n_chain)
        moved = self.moved
        #: Which moved joints a solution may move by whole turns: angles whose mimic joints
        #: (anywhere in the model) are angles turning by whole multiples of theirs -- not
        #: slides, nor a continuous joint driving a mimic joint at half its angle, which a turn
        #: moves by half a turn (:func:`whole_turns`).
        self.turning = whole_turns(model)[moved]
        #: The moved joints' (lower, upper) limits [rad or m] and whether they turn, as Python
        #: values, for code that works on one configuration in floats.
        self.float_limits = tuple(zip(model.lower_limits[moved].tolist(),
                                      model.upper_limits[moved].tolist(), self.turning.tolist()))
        #: Bounds of the moved joints' iterates (unbounded joints: none) ...
        self.clip_lower = np.array(model.lower_limits[moved])
        self.clip_upper = np.array(model.upper_limits[moved])
        # Angles limited at UNLIMITED or farther on a side: random starts from the turn inside
        # the limits nearest [-pi, pi] (from the middle of [-1e16, 3], a double holds an angle
        # only to 1 rad); on both sides, those that turn (the others drive a mimic joint by
        # part of a turn) are, for the IK, unbounded.
        lower, upper = model.lower_limits[moved], model.upper_limits[moved]
        huge = model.angular_joints[moved] & ((lower <= -UNLIMITED) | (upper >= UNLIMITED))
        start = np.clip(-np.pi, lower, np.maximum(upper - _TWO_PI, lower))
        unlimited = self.turning & (lower <= -UNLIMITED) & (upper >= UNLIMITED)
        #: ... and the range random starting points are drawn from (unbounded joints: a turn).
        self.lower = np.where(huge, start, model.sampling_lower[moved])
        self.upper = np.where(huge, np.minimum(start + _TWO_PI, upper), model.sampling_upper[moved])
        #: Moved joints whose position counts only modulo a turn inside limits a turn or more
        #: apart (:attr:`turning`, in a chain without mimic joints): iterates may wrap across
        #: those limits.
        turns = (self.upper - self.lower >= _TWO_PI - 1e-9) & np.isfinite(self.clip_lower)
        turns &= self.turning if not self.mimic else False
        self.turns = np.flatnonzero(turns) if turns.any() else None
        self.clip_lower[turns], self.clip_upper[turns] = -np.inf, np.inf   # wrapped instead
        self.turn_middle = 0.5 * (self.lower[turns] + self.upper[turns])
        #: Joints (nq,) of :attr:`moved` whose angle is unbounded (or limited only by
        #: :data:`UNLIMITED`) and :attr:`turning`: solutions move them by whole turns toward the
        #: seed (no joint outside the chain).
        self.periodic = np.zeros(model.nq, dtype=bool)
        self.periodic[moved] = unlimited
        #: Indices into :attr:`moved` of those joints.
        self.unbounded = np.flatnonzero(self.periodic[moved])
        #: ``(i, j, lower, upper)`` of each joint whose angle counts modulo a turn -- one of
        #: :attr:`turns` or :attr:`unbounded` -- ``i`` its index in :attr:`moved`, ``j`` in
        #: ``q``, its limits as floats (infinite: unbounded): where a solution's angle is moved
        #: by the whole turns nearest a seed (:func:`turn_into_limits`).
        modular = np.zeros(len(moved), dtype=bool)
        modular[self.unbounded] = True
        if self.turns is not None:
            modular[self.turns] = True
        self.turn_limits = tuple((i, int(moved[i]), float(model.lower_limits[moved[i]]),
                                  float(model.upper_limits[moved[i]]))
                                 for i in np.flatnonzero(modular).tolist())
        for array in (self.basis, self.clip_lower, self.clip_upper, self.frame_placement,
                      self.periodic, self.unbounded, self.turning):
            array.setflags(write=False)

    def wrap(self, X):
        """Joints :attr:`turns` of ``X`` (B, m) moved by whole turns into the middle turn of
        their limits, in place (the pose does not change).
        """
        t = self.turns
        if t is not None:
            X[:, t] -= _TWO_PI * np.round((X[:, t] - self.turn_middle) / _TWO_PI)

    def pose_and_jacobian(self, Q):
        """``T_root_frame`` (B, 4, 4) and the root-aligned Jacobian (B, 6, len(moved)) at
        ``Q`` (B, nq), its columns those of the joints :attr:`moved` (the others are zero);
        root is :attr:`root_body`'s frame, the world for a fixed base.
        """
        T, JT = self.evaluate(Q[:, self.moved])
        return T, JT.transpose(0, 2, 1)

    def evaluate(self, X):
        """``T_root_frame`` (B, 4, 4) and the transposed root-aligned Jacobian (B, m, 6) at
        ``X`` (B, m), the positions of the joints :attr:`moved`.
        """
        B, n = len(X), len(self.basis)
        if n == 0:
            return np.broadcast_to(self.frame_placement, (B, 4, 4)), np.zeros((B, 0, 6))
        T, tip = self._frames(X)
        # Rows of J^T: [z_k x (p_tip - p_k), z_k] for a turn about z_k, [z_k, 0] for a shift.
        zp = T.reshape(B, n, 16).take(_Z_AND_P, 2)
        d = tip.reshape(B, 1, 16).take(_P_ROTATED, 2) - zp[..., 6:12]
        zd = zp[..., :6] * d
        JT = np.empty((B, n, 6))
        np.subtract(zd[..., :3], zd[..., 3:], out=JT[..., :3])
        JT[..., 3:] = zp[..., 12:]
        if not self.pure_rotation:
            JT[..., :3] = self.angular * JT[..., :3] + self.linear * JT[..., 3:]
            JT[..., 3:] *= self.angular
        return tip, (self.mimic_rows @ JT if self.mimic else JT)

    def frames_one(self, x):
        """The z-aligned joint frames (a list of n (4, 4)) and ``T_root_frame`` (4, 4) at one
        configuration ``x`` (m,) of the joints :attr:`moved`, without the batch (its per-joint
        products cost more than the arithmetic for one row; a list, about as cheap as
        :meth:`pose`): what :meth:`jacobian_one` takes, so that a pose that already reaches its
        target costs no Jacobian.
        """
        if len(self.basis) == 0:
            return [], self.frame_placement.copy()
        L = self._links_one(x)
        T = [L[0]]
        for k in range(1, len(L)):
            T.append(T[-1].dot(L[k]))
        return T, T[-1].dot(self.frame_placement)

    def seed_frames(self, x):
        """:meth:`frames_one` of a seed ``x`` (m,), read-only (a tuple of frames), the last
        seed's kept: a caller solving target after target from one seed -- the middle of the
        limits by default, or a planner's fixed one -- computes its frames once (7-8 us of
        iCub's leg's 0.1 ms solve, whose answer's branch-jump guard needs the seed's pose). A
        new seed replaces the pair whole, so threads sharing the chain read one pair or the
        other, each of its seed. A seed that changes every solve (a robot tracking its target)
        pays about 1.5 us more than :meth:`frames_one`.
        """
        if x.dtype != np.float64:            # an int's bytes are a tiny float's: not one key
            x = x.astype(np.float64)
        key = x.tobytes()
        last = self._last_seed
        if last[0] == key:
            return last[1]
        frames, T = self.frames_one(x)
        for a in frames:
            a.setflags(write=False)
        T.setflags(write=False)
        pair = (tuple(frames), T)
        self._last_seed = (key, pair)
        return pair

    def jacobian_one(self, frames, tip):
        """The transposed root-aligned Jacobian (m, 6) of one configuration from its joint
        frames ``frames`` and pose ``tip`` (4, 4) (:meth:`frames_one`): :meth:`evaluate`'s for
        one row.
        """
        n = len(frames)
        if n == 0:
            return np.zeros((0, 6))
        zp = np.array(frames).reshape(n, 16).take(_Z_AND_P, 1)
        zd = zp[:, :6] * (tip.reshape(16).take(_P_ROTATED) - zp[:, 6:12])
        JT = np.empty((n, 6))
        np.subtract(zd[:, :3], zd[:, 3:], out=JT[:, :3])
        JT[:, 3:] = zp[:, 12:]
        if not self.pure_rotation:
            JT[:, :3] = self.angular * JT[:, :3] + self.linear * JT[:, 3:]
            JT[:, 3:] *= self.angular
        return self.mimic_rows.dot(JT) if self.mimic else JT

    def poses(self, X):
        """``T_root_frame`` (B, 4, 4) at ``X`` (B, m), the positions of the joints
        :attr:`moved`.
        """
        if len(self.basis) == 0:
            return np.broadcast_to(self.frame_placement, (len(X), 4, 4))
        return self._frames(X)[1]

    def pose(self, x):
        """``T_root_frame`` (4, 4) at one configuration ``x`` (m,) of the joints :attr:`moved`:
        :meth:`poses` without the batch (half its cost for one configuration).
        """
        if len(self.basis) == 0:
            return self.frame_placement.copy()
        L = self._links_one(x)
        T = L[0]
        for k in range(1, len(L)):
            T = T.dot(L[k])
        return T.dot(self.frame_placement)

    def _links_one(self, x):
        """``C_k Z_k(x_k)`` (n, 4, 4) of each joint of the chain at one configuration ``x``
        (m,) of the joints :attr:`moved`.
        """
        n = len(self.basis)
        x = x.take(self.x_index) * self.multiplier + self.offset if self.mimic else x
        terms = np.empty((n, 4))
        np.cos(x, out=terms[:, 0])
        np.sin(x, out=terms[:, 1])
        terms[:, 2] = 1.0
        terms[:, 3] = x
        return np.matmul(terms[:, None], self.basis).reshape(n, 4, 4)   # einsum's: 20 % more

    def _frames(self, X):
        """The z-aligned joint frames (B, n, 4, 4) and the frame's pose (B, 4, 4)."""
        n, B = len(self.basis), len(X)
        x = X.take(self.x_index, 1) * self.multiplier + self.offset if self.mimic else X
        x = x.T
        terms = np.empty((n, B, 4))
        np.cos(x, out=terms[..., 0])
        np.sin(x, out=terms[..., 1])
        terms[..., 2] = 1.0
        if self.uses_x_term:
            terms[..., 3] = x
            L = np.matmul(terms, self.basis)
        else:
            L = np.matmul(terms[..., :3], self.basis[:, :3])
        L = L.reshape(n, B, 4, 4)                # C_k Z_k(x_k)
        T = np.empty((B, n, 4, 4))               # z-aligned joint frames in the world frame
        T[:, 0] = L[0]
        for k in range(1, n):
            np.matmul(T[:, k - 1], L[k], out=T[:, k])
        return T, T[:, -1] @ self.frame_placement
