"""Outputs of measured efforts: functions from a momentum observer's estimate to messages.

Like :mod:`~ros_dynamics.ros.outputs`, none needs a running node or ``rclpy.init``. Joint-space
vectors are the model's velocity coordinates (nv,); the messages carry the model's actuated
joints (``model.actuated_joint_names``, the joints that have an effort). Wrenches are
``[force; torque]`` [N, N m] exerted *on* the robot at a tip frame's origin.
"""
from geometry_msgs.msg import WrenchStamped
import numpy as np
from sensor_msgs.msg import JointState

from ..engine.observers import external_wrench_of_state
from .conversions import vector6_to_wrench
from .outputs import check_finite


def actuated_rows(model, joint_names):
    """Indices (n_actuated,) in ``joint_names`` (a merger's) of the model's actuated joints."""
    index = {name: i for i, name in enumerate(joint_names)}
    return np.array([index[name] for name in model.actuated_joint_names], dtype=int)


def measured_torques(model, effort, rows):
    """Efforts of the actuated joints (``effort[rows]``) as generalized forces (nv,), zero on
    the coordinates no joint drives (a floating base).
    """
    tau = np.zeros(model.nv)
    tau[model.actuated_v_index] = effort[rows]
    return tau


def external_torques_message(model, tau_ext, stamp, out=None):
    """``external_torques``: JointState of the actuated joints, ``effort`` the estimated
    external torques [N m or N] (positive when the environment pushes the joint forward).
    """
    msg = out if out is not None else JointState(name=list(model.actuated_joint_names))
    msg.header.stamp = stamp
    msg.effort = tau_ext[model.actuated_v_index].tolist()
    return msg


def joints_over(model, tau_ext, thresholds):
    """Mask (n_actuated,) of the actuated joints whose external torque magnitude is above its
    threshold (``thresholds`` (n_actuated,), validated by the settings).
    """
    return np.abs(tau_ext[model.actuated_v_index]) > thresholds


def wrench_estimate(state, tau_ext, tip, base, force_only=False, J_world_tip=None):
    """The wrench at ``tip``'s origin that explains ``tau_ext`` best
    (:func:`~ros_dynamics.engine.observers.external_wrench_of_state`), in ``base``'s axes:
    ``(F_base (6,), near_singular)``; ``J_world_tip``: the tip's Jacobian of the pass when
    already computed. Raises :class:`~ros_dynamics.ros.outputs.NonFiniteOutput` when it is not
    finite.
    """
    estimate = external_wrench_of_state(state, tau_ext, tip, force_only=force_only,
                                        J_world_frame=J_world_tip)
    R_world_base = state.frame_pose(base)[:3, :3]
    F_world = estimate.wrench
    F_base = np.concatenate([R_world_base.T @ F_world[:3], R_world_base.T @ F_world[3:]])
    check_finite(f'wrench estimate of {tip!r}', F_base)
    return F_base, bool(estimate.near_singular)


def wrench_message(F_base, stamp, frame_id, out=None):
    """``wrench_estimates/<tip>``: WrenchStamped of ``F_base`` (6,) in ``frame_id``'s axes."""
    msg = out if out is not None else WrenchStamped()
    msg.header.stamp = stamp
    msg.header.frame_id = frame_id
    vector6_to_wrench(F_base, msg.wrench)
    return msg
