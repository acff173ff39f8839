"""A URDF robot simulated by MuJoCo: built from the URDF text, stepped with joint torques, pushed
and loaded at run time. No ROS here (the node is :mod:`ros_dynamics.ros.sim_node`).

The MuJoCo model is MuJoCo's own reading of the URDF (its inertials, its joint axes), not ours:
``<visual>`` and ``<collision>`` are removed (the dynamics need only the inertials, and MuJoCo
cannot read every mesh format), fixed joints are fused (``fusestatic``), inertias are taken as
written (``balanceinertia="false"``), the root link is fixed to the world (the world frame is the
root link's), ``<mimic>`` joints (which MuJoCo ignores) become joint equality constraints,
every hinge or slide joint gets the viscous damping of its ``<dynamics damping>`` when positive,
else ``default_damping`` (a joint without damping is not a real joint, and gravity compensation
through a loop with latency needs some), and with ``friction`` the dry friction of its
``<dynamics friction>`` (MuJoCo's ``frictionloss``). Contacts are off: the robot touches nothing
but what pushes it.

Wrenches are 6-vectors ``[force; torque]``, in world (root link) axes unless said otherwise.
"""
from dataclasses import dataclass
import math
import xml.etree.ElementTree as ET

import mujoco
import numpy as np

from ..engine.exceptions import InvalidInputError, UnknownFrameError, UnknownJointError, UrdfError
from . import SimulationDiverged

#: Simulation time step [s]: 1 kHz, the rate of a robot's joint controller.
TIME_STEP = 1e-3
#: Largest magnitude accepted for a torque, force, mass or length given to the simulation.
MAX_INPUT = 1e6
#: Joint speed [rad/s or m/s] beyond which a step is taken to have diverged (no robot joint
#: turns at 1,000 rad/s; a state running away gets there within a few steps).
MAX_SPEED = 1e3
#: MuJoCo's warning counter of accelerations not finite or huge.
_BAD_QACC = int(mujoco.mjtWarning.mjWARN_BADQACC)
#: A ``<mimic>`` is a rigid coupling: its equality is made as stiff as MuJoCo stays stable with
#: (time constant of two steps, impedance 0.99-0.999). MuJoCo's default (0.02 s, 0.9-0.95) let
#: a Panda's fingers part by 0.24 mm under gravity, and that shift alone turned the wrist (its
#: URDF damping is 0.003) by 25 mrad in 10 s under the exact gravity torques; 0.02 mrad now.
MIMIC_SOLREF = (2 * TIME_STEP, 1.0)
MIMIC_SOLIMP = (0.99, 0.999, 0.001, 0.5, 2.0)


@dataclass(frozen=True)
class LinkFrame:
    """Where a URDF link sits in the MuJoCo model: the body it was fused into and its pose there."""

    body: int                 # MuJoCo body id
    p_body_link: np.ndarray   # (3,) [m] link origin in the body frame
    R_body_link: np.ndarray   # (3, 3)


def _origin(element):
    """``(p, R)`` of a URDF ``<origin>`` child of ``element`` (identity when absent)."""
    origin = element.find('origin')
    xyz = [0.0, 0.0, 0.0] if origin is None else [float(v) for v in
                                                   origin.get('xyz', '0 0 0').split()]
    rpy = [0.0, 0.0, 0.0] if origin is None else [float(v) for v in
                                                   origin.get('rpy', '0 0 0').split()]
    r, p, y = rpy
    Rx = np.array([[1, 0, 0], [0, math.cos(r), -math.sin(r)], [0, math.sin(r), math.cos(r)]])
    Ry = np.array([[math.cos(p), 0, math.sin(p)], [0, 1, 0], [-math.sin(p), 0, math.cos(p)]])
    Rz = np.array([[math.cos(y), -math.sin(y), 0], [math.sin(y), math.cos(y), 0], [0, 0, 1]])
    return np.array(xyz, dtype=float), Rz @ Ry @ Rx


def mujoco_urdf(urdf_text):
    """The URDF text MuJoCo is given: visuals and collisions removed, the compiler options set.

    Also returns the parsed tree of the original (for mimic joints, damping and fixed joints).
    """
    try:
        robot = ET.fromstring(urdf_text)
    except ET.ParseError as e:
        raise UrdfError(f'robot description is not XML: {e}') from None
    if robot.tag != 'robot':
        raise UrdfError(f'expected a <robot> root element, got <{robot.tag}>')
    original = ET.fromstring(urdf_text)
    for link in robot.findall('link'):
        for child in link.findall('visual') + link.findall('collision'):
            link.remove(child)
    for old in robot.findall('mujoco'):
        robot.remove(old)
    extension = ET.SubElement(robot, 'mujoco')
    ET.SubElement(extension, 'compiler', discardvisual='true', fusestatic='true',
                  balanceinertia='false')
    return ET.tostring(robot, encoding='unicode'), original


def _add_mimic_equalities(model, urdf):
    """The model reloaded with a joint equality per ``<mimic>`` joint (MuJoCo ignores them)."""
    def jid(name):
        return mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, name)

    # MuJoCo releases differ (4.0 reads <mimic> itself): add only the equalities not there. A
    # mimic on a fixed joint (fused away) or of a joint MuJoCo did not build moves nothing.
    present = {(int(model.eq_obj1id[e]), int(model.eq_obj2id[e])) for e in range(model.neq)
               if int(model.eq_type[e]) == int(mujoco.mjtEq.mjEQ_JOINT)}
    mimics = [(j.get('name'), j.find('mimic')) for j in urdf.findall('joint')
              if j.find('mimic') is not None and jid(j.get('name')) >= 0
              and jid(j.find('mimic').get('joint', '')) >= 0
              and (jid(j.get('name')), jid(j.find('mimic').get('joint'))) not in present]
    if not mimics:
        return model
    import os
    import tempfile
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, 'model.xml')
        mujoco.mj_saveLastXML(path, model)
        mjcf = ET.parse(path).getroot()
    equality = mjcf.find('equality')
    if equality is None:
        equality = ET.SubElement(mjcf, 'equality')
    for name, mimic in mimics:
        multiplier = float(mimic.get('multiplier', '1'))
        offset = float(mimic.get('offset', '0'))
        ET.SubElement(equality, 'joint', joint1=name, joint2=mimic.get('joint'),
                      polycoef=f'{offset!r} {multiplier!r} 0 0 0')
    return mujoco.MjModel.from_xml_string(ET.tostring(mjcf, encoding='unicode'))


class SimulatedRobot:
    """A fixed-base robot in MuJoCo, stepped at :data:`TIME_STEP` with joint torques.

    ``joints`` are the hinge and slide joints that are not mimic joints, in URDF order: the
    effort command's order unless another is chosen with :meth:`set_command_order`.
    """

    def __init__(self, urdf_text, default_damping=0.5, friction=False, urdf_dynamics=True):
        if not (math.isfinite(default_damping) and 0.0 <= default_damping <= MAX_INPUT):
            raise InvalidInputError(f'default_damping: expected a finite value in [0, 1e6], '
                                    f'got {default_damping!r}')
        text, urdf = mujoco_urdf(urdf_text)
        dynamics = _joint_dynamics(urdf) if urdf_dynamics else {}
        try:
            model = mujoco.MjModel.from_xml_string(text)
        except ValueError as e:
            reason = ' '.join(str(e).split())[:1000]        # one line: MuJoCo's has several
            raise UrdfError(f'MuJoCo cannot build the robot: {reason}') from None
        self.model = _add_mimic_equalities(model, urdf)
        self.model.opt.timestep = TIME_STEP
        mimic = self.model.eq_type == int(mujoco.mjtEq.mjEQ_JOINT)
        self.model.eq_solref[mimic] = MIMIC_SOLREF
        self.model.eq_solimp[mimic] = MIMIC_SOLIMP
        # Semi-implicit in the velocity-dependent forces (Coriolis, damping): explicit Euler
        # diverges on fast motions of light links (a Panda's wrist at 3 rad/s).
        self.model.opt.integrator = int(mujoco.mjtIntegrator.mjINT_IMPLICITFAST)
        # No contacts; and no silent reset to the start when the state diverges (MuJoCo's
        # default, which also sends the clock back): :meth:`step` undoes such a step instead.
        self.model.opt.disableflags |= int(mujoco.mjtDisableBit.mjDSBL_CONTACT) | \
            int(mujoco.mjtDisableBit.mjDSBL_AUTORESET)
        self.data = mujoco.MjData(self.model)
        hinge_or_slide = (int(mujoco.mjtJoint.mjJNT_HINGE), int(mujoco.mjtJoint.mjJNT_SLIDE))
        self._mimics = {int(self.model.eq_obj1id[e]): (int(self.model.eq_obj2id[e]),
                                                        float(self.model.eq_data[e][1]))
                        for e in range(self.model.neq)
                        if int(self.model.eq_type[e]) == int(mujoco.mjtEq.mjEQ_JOINT)}
        mimic = {mujoco.mj_id2name(self.model, mujoco.mjtObj.mjOBJ_JOINT, j)
                 for j in self._mimics}
        self.all_joints = [j.get('name') for j in urdf.findall('joint')
                           if j.get('type') in ('revolute', 'continuous', 'prismatic')
                           and mujoco.mj_name2id(self.model, mujoco.mjtObj.mjOBJ_JOINT,
                                                 j.get('name')) >= 0]
        self._qpos = {}
        self._dof = {}
        for name in self.all_joints:
            jid = mujoco.mj_name2id(self.model, mujoco.mjtObj.mjOBJ_JOINT, name)
            if jid < 0 or int(self.model.jnt_type[jid]) not in hinge_or_slide:
                raise UrdfError(f'joint {name}: MuJoCo did not build it as a hinge or slide')
            self._qpos[name] = int(self.model.jnt_qposadr[jid])
            self._dof[name] = int(self.model.jnt_dofadr[jid])
        self.joints = [name for name in self.all_joints if name not in mimic]
        self._set_joint_dynamics(dynamics, default_damping, friction)
        self._links = self._link_frames(urdf)
        self._body_inertials = (self.model.body_mass.copy(), self.model.body_ipos.copy(),
                                self.model.body_iquat.copy(), self.model.body_inertia.copy())
        self.command_joints = list(self.joints)
        self._command_dofs = np.array([self._dof[n] for n in self.joints], dtype=int)
        self.command = np.zeros(len(self.joints))
        self._wrench = None      # (link frame, wrench (6,) in world axes at the link origin)
        self.payload = None      # (link, mass, com in the link)
        mujoco.mj_forward(self.model, self.data)

    # -- construction -----------------------------------------------------------------------

    def _set_joint_dynamics(self, dynamics, default_damping, friction):
        """Damping and dry friction of every joint: ``dynamics`` (joint -> (damping, friction),
        the URDF's, or none with ``urdf_dynamics`` False: then ``default_damping`` and no
        friction), the friction only with ``friction``.
        """
        for name, dof in self._dof.items():
            damping, dry = dynamics.get(name, (0.0, 0.0))
            self.model.dof_damping[dof] = damping if damping > 0 else default_damping
            self.model.dof_frictionloss[dof] = dry if friction else 0.0
        # Dry friction is a soft constraint in MuJoCo; its default time constant (20 ms) lets a
        # light joint slip under a torque below its friction: the stiffest it can be at this
        # step (two steps) makes it hold as Coulomb friction does.
        self.model.dof_solref[:, 0] = 2 * TIME_STEP

    def _link_frames(self, urdf):
        """Every URDF link's body and pose in it (links fused away sit in their parent's body)."""
        parent_joint = {j.find('child').get('link'): j for j in urdf.findall('joint')}
        frames = {}

        def frame(link):
            if link in frames:
                return frames[link]
            body = mujoco.mj_name2id(self.model, mujoco.mjtObj.mjOBJ_BODY, link)
            if body >= 0:
                result = LinkFrame(body, np.zeros(3), np.eye(3))
            elif link in parent_joint:      # fused into its parent by fusestatic
                joint = parent_joint[link]
                up = frame(joint.find('parent').get('link'))
                p, R = _origin(joint)
                result = LinkFrame(up.body, up.p_body_link + up.R_body_link @ p,
                                   up.R_body_link @ R)
            else:                           # the root link: the world body
                result = LinkFrame(0, np.zeros(3), np.eye(3))
            frames[link] = result
            return result

        for link in urdf.findall('link'):
            frame(link.get('name'))
        return frames

    # -- queries ----------------------------------------------------------------------------

    @property
    def time(self):
        """Simulated time [s] since the start."""
        return float(self.data.time)

    @property
    def links(self):
        """Names of the URDF's links, sorted."""
        return sorted(self._links)

    def positions(self, joints=None):
        """Joint positions [rad or m] of ``joints`` (default :attr:`all_joints`)."""
        return np.array([self.data.qpos[self._qpos[n]] for n in joints or self.all_joints])

    def velocities(self, joints=None):
        """Joint velocities [rad/s or m/s] of ``joints`` (default :attr:`all_joints`)."""
        return np.array([self.data.qvel[self._dof[n]] for n in joints or self.all_joints])

    def efforts(self, joints=None):
        """Torques applied to ``joints`` by the command (0 on mimic joints) [N m or N]."""
        applied = self.data.qfrc_applied
        return np.array([applied[self._dof[n]] for n in joints or self.all_joints])

    def gravity_torques(self):
        """MuJoCo's bias forces at rest in the current configuration (``qfrc_bias`` with zero
        velocity) as torques of :attr:`joints` [N m or N]: a mimic joint's load is carried by
        its leader, times the multiplier.
        """
        data = mujoco.MjData(self.model)
        data.qpos[:] = self.data.qpos
        mujoco.mj_forward(self.model, data)
        bias = data.qfrc_bias.copy()
        m = self.model
        for follower, (leader, multiplier) in self._mimics.items():
            bias[m.jnt_dofadr[leader]] += multiplier * bias[m.jnt_dofadr[follower]]
        return np.array([bias[self._dof[n]] for n in self.joints])

    def limits(self, joint):
        """``(lower, upper)`` of ``joint`` [rad or m] (infinite for an unlimited joint)."""
        jid = mujoco.mj_name2id(self.model, mujoco.mjtObj.mjOBJ_JOINT, joint)
        if jid < 0 or joint not in self._qpos:
            raise UnknownJointError(joint, self.all_joints)
        if not self.model.jnt_limited[jid]:
            return -math.inf, math.inf
        low, high = self.model.jnt_range[jid]
        return float(low), float(high)

    def link_frame(self, link):
        """The :class:`LinkFrame` of ``link`` (:class:`UnknownFrameError` listing the links)."""
        if link not in self._links:
            raise UnknownFrameError(link, self.links)
        return self._links[link]

    def T_world_link(self, link):
        """Pose ``(p (3,), R (3, 3))`` of ``link`` in the world (root link) frame."""
        f = self.link_frame(link)
        R_world_body = self.data.xmat[f.body].reshape(3, 3)
        return (self.data.xpos[f.body] + R_world_body @ f.p_body_link,
                R_world_body @ f.R_body_link)

    # -- inputs -----------------------------------------------------------------------------

    def set_command_order(self, joints):
        """Joint order of :meth:`set_command` (the ``joints`` of a forward command controller)."""
        unknown = [n for n in joints if n not in self.joints]
        if unknown or len(set(joints)) != len(joints) or not joints:
            raise InvalidInputError(f'command joints: expected distinct joints among '
                                    f'{self.joints}, got {list(joints)}')
        self.command_joints = list(joints)
        self._command_dofs = np.array([self._dof[n] for n in joints], dtype=int)
        self.command = np.zeros(len(joints))
        self.data.qfrc_applied[:] = 0.0

    def set_command(self, effort):
        """Apply ``effort`` (len(command_joints),) [N m or N] from the next step on."""
        effort = _checked(effort, 'effort command', (len(self.command_joints),))
        self.command = effort
        self.data.qfrc_applied[:] = 0.0
        self.data.qfrc_applied[self._command_dofs] = effort

    def set_state(self, positions, joints=None):
        """Place ``joints`` (default :attr:`joints`) at ``positions``, at rest, command zero.
        Mimic joints follow their leaders.
        """
        joints = list(joints or self.joints)
        positions = _checked(positions, 'positions', (len(joints),))
        unknown = [n for n in joints if n not in self._qpos]
        if unknown:
            raise InvalidInputError(f'unknown joints {unknown}; joints are {self.all_joints}')
        for n, value in zip(joints, positions):
            self.data.qpos[self._qpos[n]] = value
        self.data.qvel[:] = 0.0
        self.set_command(np.zeros(len(self.command_joints)))
        self._satisfy_mimics()
        mujoco.mj_forward(self.model, self.data)

    def _satisfy_mimics(self):
        m = self.model
        for e in range(m.neq):
            if int(m.eq_type[e]) != int(mujoco.mjtEq.mjEQ_JOINT):
                continue
            follower, leader = m.eq_obj1id[e], m.eq_obj2id[e]
            offset, multiplier = m.eq_data[e][0], m.eq_data[e][1]
            self.data.qpos[m.jnt_qposadr[follower]] = \
                offset + multiplier * self.data.qpos[m.jnt_qposadr[leader]]

    def set_wrench(self, link, wrench_link):
        """Hold ``wrench_link`` = ``[force; torque]`` [N, N m], in ``link``'s axes at its origin,
        on ``link`` until another call; a zero wrench releases it.
        """
        frame = self.link_frame(link)
        wrench_link = _checked(wrench_link, 'wrench', (6,))
        if frame.body == 0:
            raise InvalidInputError(f'link {link} is fixed to the world: a wrench on it moves '
                                    'nothing')
        self._wrench = None if not np.any(wrench_link) else (link, wrench_link)
        self._apply_wrench()

    def release_wrench(self):
        """Release the held wrench, if any."""
        self._wrench = None
        self.data.xfrc_applied[:] = 0.0

    def _apply_wrench(self):
        self.data.xfrc_applied[:] = 0.0
        if self._wrench is None:
            return
        link, w = self._wrench
        frame = self._links[link]
        p, R = self.T_world_link(link)
        force, torque = R @ w[:3], R @ w[3:]
        # MuJoCo applies xfrc_applied at the body's center of mass.
        self.data.xfrc_applied[frame.body] = np.concatenate(
            [force, torque + np.cross(p - self.data.xipos[frame.body], force)])

    def applied_wrench_world(self):
        """The held wrench ``[force; torque]`` in world axes at its link's origin, or zeros."""
        if self._wrench is None:
            return np.zeros(6)
        link, w = self._wrench
        _, R = self.T_world_link(link)
        return np.concatenate([R @ w[:3], R @ w[3:]])

    def set_payload(self, link, mass, com_link):
        """Attach a point mass ``mass`` [kg] at ``com_link`` (3,) [m] in ``link``'s frame to the
        body ``link`` belongs to, replacing any payload attached before; mass 0 removes it.
        """
        if mass == 0.0:
            self.remove_payload()
            return
        frame = self.link_frame(link)
        mass = float(_checked([mass], 'payload mass', (1,))[0])
        com_link = _checked(com_link, 'payload com', (3,))
        if mass < 0:
            raise InvalidInputError(f'payload mass: expected >= 0, got {mass!r}')
        if mass > 0 and frame.body == 0:
            raise InvalidInputError(f'link {link} is fixed to the world: a payload on it '
                                    'loads nothing')
        m = self.model
        masses, ipos, iquat, inertia = self._body_inertials
        m.body_mass[:], m.body_ipos[:], m.body_iquat[:], m.body_inertia[:] = \
            masses, ipos, iquat, inertia
        self.payload = None
        if mass > 0:
            b = frame.body
            c_body = frame.p_body_link + frame.R_body_link @ com_link
            R = np.zeros(9)
            mujoco.mju_quat2Mat(R, iquat[b])
            R = R.reshape(3, 3)
            I_body = R @ np.diag(inertia[b]) @ R.T          # about the body's com, body axes
            m0 = masses[b]
            total = m0 + mass
            com = (m0 * ipos[b] + mass * c_body) / total

            def shift(m_, d):
                return m_ * (d @ d * np.eye(3) - np.outer(d, d))

            I_new = I_body + shift(m0, ipos[b] - com) + shift(mass, c_body - com)
            principal, axes = np.linalg.eigh(I_new)
            if np.linalg.det(axes) < 0:
                axes[:, 0] = -axes[:, 0]
            quat = np.zeros(4)
            mujoco.mju_mat2Quat(quat, axes.reshape(9))
            m.body_mass[b], m.body_ipos[b] = total, com
            m.body_iquat[b], m.body_inertia[b] = quat, np.maximum(principal, 1e-12)
            self.payload = (link, mass, com_link)
        self._set_constants()

    def remove_payload(self):
        """Back to the robot's own inertials."""
        m = self.model
        m.body_mass[:], m.body_ipos[:], m.body_iquat[:], m.body_inertia[:] = self._body_inertials
        self.payload = None
        self._set_constants()

    def _set_constants(self):
        """``mj_setConst`` after an inertial change; it works at ``qpos0`` in the data it is
        given, so the state is kept aside and put back.
        """
        d = self.data
        state = d.qpos.copy(), d.qvel.copy(), d.time, d.qfrc_applied.copy()
        mujoco.mj_setConst(self.model, d)
        d.qpos[:], d.qvel[:], d.time, d.qfrc_applied[:] = state
        mujoco.mj_forward(self.model, d)

    # -- time -------------------------------------------------------------------------------

    def step(self):
        """One :data:`TIME_STEP` of simulation with the held command and wrench.

        A step whose accelerations MuJoCo finds not finite or huge, or after which a joint
        moves faster than :data:`MAX_SPEED` (a command, push or payload far beyond what the
        robot's inertia takes) is undone: the state goes back to before it,
        the joints are held still for the step, the wrench is released and the command zeroed;
        raises :class:`SimulationDiverged` saying so.
        """
        self._apply_wrench()
        d = self.data
        qpos, t = d.qpos.copy(), d.time
        bad = d.warning[_BAD_QACC].number
        mujoco.mj_step(self.model, d)
        if d.warning[_BAD_QACC].number == bad and np.all(np.isfinite(d.qpos)) and \
                np.all(np.abs(d.qvel) <= MAX_SPEED):
            return
        d.qpos[:], d.qvel[:], d.time = qpos, 0.0, t + TIME_STEP
        d.qacc_warmstart[:] = 0.0            # the solver's next start, else from the blow-up
        self.release_wrench()
        self.set_command(np.zeros(len(self.command_joints)))
        mujoco.mj_forward(self.model, d)
        raise SimulationDiverged(
            f'the simulation diverged at t = {t:.3f} s (accelerations not finite or '
            'huge): step undone, joints held, wrench released, command zeroed')

    def restart_time(self):
        """Simulated time back to zero (what a simulator's reset does to its clock)."""
        self.data.time = 0.0

    def hold(self):
        """One :data:`TIME_STEP` with the joints held still (brakes on)."""
        self.data.qvel[:] = 0.0
        self.data.time += TIME_STEP


def _joint_dynamics(urdf):
    """Joint name -> (damping, friction) of every ``<joint>`` with ``<dynamics>`` in the
    parsed ``urdf``, each finite and in [0, :data:`MAX_INPUT`] (before MuJoCo reads them).
    """
    found = {}
    for joint in urdf.findall('joint'):
        dynamics = joint.find('dynamics')
        if dynamics is not None:
            found[joint.get('name')] = tuple(_dynamics_value(joint.get('name'), dynamics.attrib,
                                                             key)
                                             for key in ('damping', 'friction'))
    return found


def _dynamics_value(joint, dynamics, key):
    """``<dynamics key=...>`` of ``joint`` (0 when absent): finite, in [0, MAX_INPUT]."""
    text = dynamics.get(key, '0')
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and 0.0 <= value <= MAX_INPUT):
        raise UrdfError(f'joint {joint}: <dynamics {key}="{text[:50]}">: expected a finite '
                        f'value in [0, {MAX_INPUT:g}]')
    return value


def _checked(values, what, shape):
    """``values`` as a float array of ``shape``, finite and at most :data:`MAX_INPUT`."""
    try:
        array = np.array(values, dtype=float)
    except (TypeError, ValueError):
        raise InvalidInputError(f'{what}: expected numbers, got {values!r:.200}') from None
    if array.shape != shape:
        raise InvalidInputError(f'{what}: expected {shape[0]} values, got {array.size}')
    if not np.all(np.isfinite(array)) or np.any(np.abs(array) > MAX_INPUT):
        raise InvalidInputError(f'{what}: expected finite values of at most {MAX_INPUT:g}, '
                                f'got {array.tolist()!r:.200}')
    return array
