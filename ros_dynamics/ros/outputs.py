"""Outputs of the dynamics node: functions from one kinematics pass to messages.

Each function reads a model, a :class:`~ros_dynamics.engine.kinematics.KinematicState` of one
joint state, the node's :class:`~ros_dynamics.ros.settings.NodeSettings` and the inputs it
holds (wrenches, a trajectory), and returns messages; none needs a running node or
``rclpy.init``. Where a function takes ``out``, it fills that message instead of a new one: the
node refills messages built once per model and settings (:func:`message_templates`), since
publishing serialises a message and it can be reused at once.

Frame ids in the messages carry the settings' ``frame_prefix`` (robot_state_publisher's). A
pass whose numbers are not all finite (a description with huge origins, say) raises
:class:`NonFiniteOutput` before any message is filled.

Frames in names: ``world`` is the engine's fixed frame (the root link's, for a fixed base),
``base`` the settings' base frame, ``tip`` a tip frame. ``T_a_b`` (4, 4) is the pose of frame
b in frame a, ``R_a_b`` its rotation; ``J_a_tip`` (6, nv) is the Jacobian of the tip's origin,
rows ``[linear; angular]`` in frame a's axes, columns the model's velocity coordinates
(``model.v_names``: with a floating base, its six first). Torques published are those of
``model.actuated_joint_names`` (one-DOF joints; all the joints of a fixed base).
"""
from dataclasses import dataclass

from geometry_msgs.msg import PoseStamped, TwistStamped
import numpy as np
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, MultiArrayDimension
from trajectory_msgs.msg import JointTrajectory

from ..engine import jacobians, kinematics, rnea
from ..engine.spatial import inverse_transform
from . import markers
from .conversions import pose_from_matrix, vector6_to_twist


class NonFiniteOutput(ArithmeticError):
    """An output pass gave NaN or Inf; nothing of it may be published."""


def check_finite(what, *arrays):
    """Raise :class:`NonFiniteOutput` naming ``what`` unless every array is finite."""
    for a in arrays:
        if not np.all(np.isfinite(a)):
            raise NonFiniteOutput(f'{what} not finite')


@dataclass(frozen=True)
class OutputMessages:
    """Messages of the streaming path, built once per model and settings and refilled.

    ``tips`` maps each tip frame to its (pose, twist, Jacobian) messages.
    """

    gravity: JointState
    command: Float64MultiArray
    tips: dict


def message_templates(model, settings):
    """:class:`OutputMessages` with the names, frames and layouts of ``model`` and
    ``settings`` filled in.
    """
    tips = {}
    base_id = settings.frame_prefix + settings.base_frame
    for tip in settings.tips:
        pose, twist = PoseStamped(), TwistStamped()
        pose.header.frame_id = twist.header.frame_id = base_id
        tips[tip] = (pose, twist, jacobian_message(np.zeros((6, model.nv)), model.v_names,
                                                   base_id))
    return OutputMessages(JointState(name=list(model.actuated_joint_names)),
                          float_array([0.0] * len(settings.command_index)), tips)


class TipJacobians:
    """``J_world_tip`` of one kinematics pass, each computed on first use and then kept."""

    def __init__(self, state):
        self._state = state
        self._J_world = {}

    def world(self, tip):
        """``J_world_tip`` (6, nv): the tip origin's Jacobian in world axes."""
        J_world_tip = self._J_world.get(tip)
        if J_world_tip is None:
            J_world_tip = self._J_world[tip] = jacobians.frame_jacobian(
                self._state, tip, 'local_world_aligned')
        return J_world_tip


def kinematics_pass(model, settings, q, qd, velocities=False):
    """The one kinematics pass of a joint state (``q`` (nq,), ``qd`` (nv,)): with the base
    fixed to the world, twists are ``J qd`` and body velocities are only needed for the
    momentum or when asked for (``velocities``: the external-torque observer).
    """
    use_qd = velocities or not settings.base_fixed or settings.outputs.momentum
    return kinematics.forward_kinematics(model, q, qd if use_qd else None, check=False)


def holding_torques(model, state, settings, wrenches, jacobians_):
    """Torques (nq,) [N m or N] holding the robot against gravity and against the wrenches
    held at its tips: ``g(q) + sum J_world_tip^T F_world``.

    ``wrenches`` maps a tip to ``(frame, F_frame)``: a wrench ``[force; torque]`` (6,) [N, N m]
    in ``frame``'s axes; tips not in the settings are skipped.
    """
    tau = rnea.gravity_torques(model, state)
    for tip, (frame, F_frame) in wrenches.items():
        if tip in settings.tips:
            R_world_frame = state.frame_pose(frame)[:3, :3]
            F_world = np.concatenate([R_world_frame @ F_frame[:3], R_world_frame @ F_frame[3:]])
            tau = tau + jacobians_.world(tip).T @ F_world
    check_finite('torques', tau)
    return tau


def gravity_joint_state(model, tau, stamp, out=None):
    """``gravity_torques``: JointState with the actuated joints' names and their torques
    ``tau`` (n_actuated,) as effort.
    """
    msg = out if out is not None else JointState(name=list(model.actuated_joint_names))
    msg.header.stamp = stamp
    msg.effort = tau.tolist()
    return msg


def gravity_command(settings, tau, out=None):
    """``gravity_command``: the actuated torques ``tau`` in the order of the settings'
    command joints.
    """
    if out is None:
        return float_array(tau[settings.command_index])
    out.data = tau[settings.command_index].tolist()
    return out


def tip_messages(model, state, settings, qd, stamp, jacobians_, templates=None, ready=None):
    """Pose, twist and Jacobian messages of every tip (of those ``ready`` says, a bool per
    tip, when given), in the base frame: a list of ``(tip, pose, twist, jacobian)``, each None
    where its output is switched off.
    """
    on = settings.outputs
    base = settings.base_frame
    T_world_base = state.frame_pose(base)
    R_world_base = T_world_base[:3, :3]
    T_base_world = inverse_transform(T_world_base)
    templates = templates if templates is not None else message_templates(model, settings)
    out = []
    for k, tip in enumerate(settings.tips):
        if ready is not None and not ready[k]:
            continue
        pose, twist, jac = templates.tips[tip]
        J_base_tip = None
        if on.jacobians or (on.twists and settings.base_fixed):
            J_world_tip = jacobians_.world(tip)
            J_base_tip = np.vstack([R_world_base.T @ J_world_tip[:3],
                                    R_world_base.T @ J_world_tip[3:]])
        if on.poses:
            T_base_tip = T_base_world @ state.frame_pose(tip)
            check_finite(f'pose of {tip!r}', T_base_tip)
            pose.header.stamp = stamp
            pose_from_matrix(T_base_tip, pose.pose)
        if on.twists:
            # A base fixed to the world: the twist is J qd; a moving base: relative motion.
            V_base_tip = J_base_tip @ qd if settings.base_fixed else np.concatenate(
                kinematics.relative_twist(state, tip, base, base, base))
            check_finite(f'twist of {tip!r}', V_base_tip)
            twist.header.stamp = stamp
            vector6_to_twist(V_base_tip, twist.twist)
        if on.jacobians:
            check_finite(f'Jacobian of {tip!r}', J_base_tip)
            jac.data = J_base_tip.ravel().tolist()
        out.append((tip, pose if on.poses else None, twist if on.twists else None,
                    jac if on.jacobians else None))
    return out


def markers_message(model, state, settings, tau, stamp, jacobians_, ready=None):
    """``markers``: center of mass, a manipulability ellipsoid per tip (of those ``ready``
    says, when given), the actuated torques ``tau`` as arrows along the joint axes; all in the
    base frame.
    """
    T_base_world = inverse_transform(state.frame_pose(settings.base_frame))
    R_base_world, p_base_world = T_base_world[:3, :3], T_base_world[:3, 3]
    ellipsoids, tips = [], []
    for k, tip in enumerate(settings.tips):
        if ready is not None and not ready[k]:
            continue
        J_base_tip = R_base_world @ jacobians_.world(tip)[:3]
        check_finite(f'Jacobian of {tip!r}', J_base_tip)
        axes, lengths = markers.manipulability_ellipsoid(J_base_tip)
        ellipsoids.append(((T_base_world @ state.frame_pose(tip))[:3, 3], axes, lengths))
        tips.append(tip)
    z_world, origins_world = state.joint_axes_world
    actuated = [model.moving_index[n] for n in model.actuated_joint_names]
    com_base = R_base_world @ rnea.center_of_mass(model, state) + p_base_world \
        if model.total_mass > 0 else p_base_world
    origins_base = origins_world[actuated] @ R_base_world.T + p_base_world
    check_finite('markers', com_base, origins_base)
    v = model.actuated_v_index
    return markers.build(
        settings.frame_prefix + settings.base_frame, stamp, com_base, tips, ellipsoids,
        origins_base, z_world[actuated] @ R_base_world.T, tau, model.effort_limits[v])


def feedforward_command(model, settings, q, trajectory, index, t):
    """``feedforward_command``: inverse dynamics of ``trajectory`` sampled at ``t`` [s] from its
    start (its joints at ``index = (in q, in v)``; the other coordinates keep ``q``, at rest --
    a floating base at its current pose, zero velocity and acceleration), the actuated torques
    in the order of the command joints.
    """
    iq, iv = index
    q_ff, qd_ff, qdd_ff = q.copy(), np.zeros(model.nv), np.zeros(model.nv)
    q_ff[iq], qd_ff[iv], qdd_ff[iv] = trajectory.sample(t)
    tau = model.inverse_dynamics(q_ff, qd_ff, qdd_ff, friction=settings.friction)
    check_finite('feedforward torques', tau)
    return float_array(tau[model.actuated_v_index[settings.command_index]])


def feedforward_trajectory(model, settings, msg, trajectory, index, q):
    """``feedforward_trajectory``: the JointTrajectory ``msg`` (validated as ``trajectory``,
    its joints at ``index = (in q, in v)``) with every point's effort filled by inverse
    dynamics; coordinates it does not name keep ``q``, at rest (as :func:`feedforward_command`).
    """
    out = JointTrajectory()
    out.header = msg.header
    out.joint_names = list(trajectory.joint_names)
    out.points = list(msg.points)
    for point, effort in zip(out.points, feedforward_efforts(model, settings, trajectory,
                                                              index, q)):
        point.effort = effort.tolist()
    return out


def feedforward_efforts(model, settings, trajectory, index, q):
    """The inverse-dynamics torques (N, n) of the trajectory's joints at its N points (see
    :func:`feedforward_trajectory`).
    """
    iq, iv = index
    q_t = np.repeat(q[None, :], len(trajectory.times), axis=0)
    qd_t = np.zeros((len(trajectory.times), model.nv))
    qdd_t = np.zeros_like(qd_t)
    q_t[:, iq], qd_t[:, iv], qdd_t[:, iv] = \
        trajectory.positions, trajectory.velocities, trajectory.accelerations
    tau = model.inverse_dynamics(q_t, qd_t, qdd_t, friction=settings.friction)
    check_finite('feedforward torques of the trajectory', tau)
    return tau[:, iv]


def float_array(values, label='joints'):
    """A one-dimensional Float64MultiArray labelled ``label``."""
    msg = Float64MultiArray()
    msg.layout.dim = [MultiArrayDimension(label=label, size=len(values), stride=len(values))]
    msg.data = [float(v) for v in values]
    return msg


def jacobian_message(J_base_tip, joint_names, base):
    """6 x nv Jacobian, row-major; rows vx vy vz wx wy wz in ``base`` axes, columns the
    velocity coordinates ``joint_names`` (``model.v_names``).
    """
    n = J_base_tip.shape[1]
    msg = Float64MultiArray()
    msg.layout.dim = [
        MultiArrayDimension(label=f'rows:vx,vy,vz,wx,wy,wz@{base}', size=6, stride=6 * n),
        MultiArrayDimension(label='cols:' + ','.join(joint_names), size=n, stride=n)]
    msg.data = J_base_tip.ravel().tolist()
    return msg
