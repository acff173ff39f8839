"""The node's default tip frames: the ends of the robot's moving chains, not every leaf link.

A description's leaf links include cameras, range sensors, collision helpers and finger tips
(about 30 on Baxter, 34 on PR2); each tip costs per-tip outputs and four topics, so the node
picks, when ``tip_frames`` is empty, one frame per end of a moving chain:

1. The chains are the tree of moving joints. A *hand* -- a small subtree of at most
   :data:`HAND_JOINTS` joints hanging, beside at least one other, from a body at least
   :data:`MIN_ARM_JOINTS` joints from the root (a gripper's fingers) -- is not a chain of its
   own: the body it hangs from ends the arm.
2. Each body that ends a chain (no moving joint below it but hands) gives one tip: the frame
   fixed to it at the end of the longest chain of fixed joints (``tool0`` after ``flange``,
   ``panda_hand_tcp`` after ``panda_hand``), the last in the description's depth-first order
   on a tie.

Examples (example-robot-data): UR5 ``tool0``; Panda ``panda_hand_tcp``; Baxter ``display``,
``right_gripper``, ``left_gripper``; TALOS ``rgbd_rgb_optical_frame``, its two gripper links and
its two soles. A model without moving joints keeps its leaf links.
"""
import numpy as np

#: Most joints a subtree may have to count as a hand (fingers) rather than a chain.
HAND_JOINTS = 3
#: Fewest joints between the root and the body a hand hangs from.
MIN_ARM_JOINTS = 3


def default_tips(model) -> tuple:
    """The tip frames of ``model`` (a :class:`~ros_dynamics.engine.model.Model`) by the rule
    of the module docstring, in the depth-first order of their bodies.
    """
    n_bodies = model.n_bodies
    if n_bodies == 1:
        return tuple(model.leaf_frames)
    parent = np.concatenate([[-1], model.joint_parent_body]).astype(int)   # body -> parent
    depth = np.zeros(n_bodies, dtype=int)
    joints_below = np.ones(n_bodies, dtype=int)      # joints of the subtree a body starts
    joints_below[0] = 0
    for b in range(1, n_bodies):                     # parents come before their children
        depth[b] = depth[parent[b]] + 1
    for b in range(n_bodies - 1, 0, -1):
        joints_below[parent[b]] += joints_below[b]
    children = np.bincount(parent[1:], minlength=n_bodies)
    hand = np.zeros(n_bodies, dtype=bool)
    for b in range(1, n_bodies):
        p = parent[b]
        hand[b] = hand[p] or (joints_below[b] <= HAND_JOINTS and depth[p] >= MIN_ARM_JOINTS
                              and children[p] >= 2)
    chain_children = np.bincount(parent[1:][~hand[1:]], minlength=n_bodies)
    ends = [b for b in range(1, n_bodies) if not hand[b] and chain_children[b] == 0]
    return tuple(_end_frame(model, b) for b in ends)


def _end_frame(model, body):
    """The frame fixed to ``body`` at the end of its longest chain of fixed joints."""
    best, best_depth = None, -1
    for f, b in zip(model.frame_names, model.frame_body):
        if b != body:
            continue
        fixed_depth, frame = 0, f
        while True:
            up = model.frame_parent.get(frame)
            if up is None or model.frame_body[model.frame_index(up)] != body:
                break
            frame, fixed_depth = up, fixed_depth + 1
        if fixed_depth >= best_depth:
            best, best_depth = f, fixed_depth
    return best
