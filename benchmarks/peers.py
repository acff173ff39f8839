"""Adapters: each library that installs here, loading one robot and timing the same operations.

Every adapter exposes ``ops``: name -> callable(q, qd, qdd) for the operations it can do;
an operation it cannot do is missing and the report says why (``notes``). Peers load a copy of
the URDF without geometry (some cannot resolve ``package://`` mesh URIs; geometry plays no part
in kinematics or dynamics).
"""
import os
import tempfile
import time
import warnings
import xml.etree.ElementTree as ET

import numpy as np

OPERATIONS = ('frame_pose', 'all_frame_poses', 'jacobian', 'gravity', 'inverse_dynamics',
              'mass_matrix', 'forward_dynamics')


def kinematic_copy(path):
    """Path of a copy of the URDF with links reduced to their inertials."""
    root = ET.parse(path).getroot()
    for link in root.findall('link'):
        for child in list(link):
            if child.tag != 'inertial':
                link.remove(child)
    for tag in ('transmission', 'gazebo'):
        for elem in root.findall(tag):
            root.remove(elem)
    fd, out = tempfile.mkstemp(suffix='.urdf', prefix='ros_dynamics_bench_')
    os.close(fd)
    ET.ElementTree(root).write(out)
    return out


class Ours:
    """ros_dynamics itself."""

    name = 'ros_dynamics'

    def __init__(self, model, tip):
        m = model
        self.notes = {}
        self.ops = {
            'frame_pose': lambda q, qd, qdd: m.frame_pose(q, tip),
            'all_frame_poses': lambda q, qd, qdd: m.kinematics(q).frame_poses(),
            'jacobian': lambda q, qd, qdd: m.jacobian(q, tip),
            'gravity': lambda q, qd, qdd: m.gravity_torques(q),
            'inverse_dynamics': lambda q, qd, qdd: m.inverse_dynamics(q, qd, qdd),
            'mass_matrix': lambda q, qd, qdd: m.mass_matrix(q),
            'forward_dynamics': lambda q, qd, qdd: m.forward_dynamics(q, qd, qdd),
        }


class Pinocchio:
    """Pinocchio's Python bindings (the reference)."""

    name = 'pinocchio'

    def __init__(self, model, tip, path):
        import pinocchio as pin
        self.pin = pin
        self.model = pm = pin.buildModelFromUrdf(path)
        pd = pm.createData()
        fid = pm.getFrameId(tip)
        idx_v = [pm.joints[pm.getJointId(n)].idx_v for n in model.moving_joint_names]
        G = np.zeros((pm.nv, model.nq))
        G[idx_v] = model.rate_matrix()
        self.convert = lambda q: _pin_q(pin, pm, model, q)
        self.G = G
        self.notes = {}

        def pose(q, qd, qdd):
            pin.forwardKinematics(pm, pd, q)
            return pin.updateFramePlacement(pm, pd, fid)

        self.ops = {
            'frame_pose': pose,
            'all_frame_poses': lambda q, qd, qdd: pin.framesForwardKinematics(pm, pd, q),
            'jacobian': lambda q, qd, qdd: pin.computeFrameJacobian(
                pm, pd, q, fid, pin.LOCAL_WORLD_ALIGNED),
            'gravity': lambda q, qd, qdd: pin.computeGeneralizedGravity(pm, pd, q),
            'inverse_dynamics': lambda q, qd, qdd: pin.rnea(pm, pd, q, qd, qdd),
            'mass_matrix': lambda q, qd, qdd: pin.crba(pm, pd, q),
            'forward_dynamics': lambda q, qd, qdd: pin.aba(pm, pd, q, qd, qdd),
        }

    def state(self, q, qd, qdd):
        """Our state in this library's joint order and representation."""
        return self.convert(q), self.G @ qd, self.G @ qdd


def _pin_q(pin, pm, model, q):
    out = pin.neutral(pm)
    qj = model.joint_positions(q)
    for k, name in enumerate(model.moving_joint_names):
        j = pm.joints[pm.getJointId(name)]
        if j.nq == 2:
            out[j.idx_q:j.idx_q + 2] = [np.cos(qj[k]), np.sin(qj[k])]
        else:
            out[j.idx_q] = qj[k]
    return out


class RoboticsToolbox:
    """roboticstoolbox-python (C-accelerated ETS kinematics, Python dynamics)."""

    name = 'roboticstoolbox'

    def __init__(self, model, tip, path):
        import roboticstoolbox as rtb
        with warnings.catch_warnings():
            warnings.simplefilter('ignore')
            self.robot = robot = rtb.Robot.URDF(kinematic_copy(path))
        self.index = [model.joint_names.index(n) if n in model.joint_names else None
                      for n in _rtb_joint_names(robot)]
        self.tip = tip
        self.notes = {}
        self.ops = {
            'frame_pose': lambda q, qd, qdd: robot.fkine(q, end=tip),
            'all_frame_poses': lambda q, qd, qdd: robot.fkine_all(q),
            'jacobian': lambda q, qd, qdd: robot.jacob0(q, end=tip),
            'gravity': lambda q, qd, qdd: robot.gravload(q),
            'inverse_dynamics': lambda q, qd, qdd: robot.rne(q, qd, qdd),
            'mass_matrix': lambda q, qd, qdd: robot.inertia(q),
            'forward_dynamics': lambda q, qd, qdd: robot.accel(q, qd, qdd),
        }

    def state(self, q, qd, qdd):
        """Our state in this library's joint order and representation."""
        pick = [q[i] if i is not None else 0.0 for i in self.index]
        pick_d = [qd[i] if i is not None else 0.0 for i in self.index]
        pick_dd = [qdd[i] if i is not None else 0.0 for i in self.index]
        return np.array(pick), np.array(pick_d), np.array(pick_dd)


def _rtb_joint_names(robot):
    out = []
    for link in robot.links:
        if link.isjoint:
            out.append(getattr(link, 'jname', None) or link.name)
    return out


class PyBullet:
    """PyBullet (Bullet physics) in DIRECT mode."""

    name = 'pybullet'

    def __init__(self, model, tip, path):
        import pybullet as pb
        self.pb = pb
        self.cid = pb.connect(pb.DIRECT)
        self.body = pb.loadURDF(kinematic_copy(path), useFixedBase=True,
                                physicsClientId=self.cid)
        joints = [pb.getJointInfo(self.body, i, physicsClientId=self.cid)
                  for i in range(pb.getNumJoints(self.body, physicsClientId=self.cid))]
        movable = [j for j in joints if j[2] != pb.JOINT_FIXED]
        self.indices = [j[0] for j in movable]
        self.names = [j[1].decode() for j in movable]
        self.link = [j[0] for j in joints if j[12].decode() == tip]
        self.index = [model.joint_names.index(n) if n in model.joint_names else None
                      for n in self.names]
        self.notes = {'forward_dynamics': 'no pure forward-dynamics call (stepSimulation '
                                          'integrates with contacts)',
                      'all_frame_poses': 'one getLinkState call per link'}
        link = self.link[0] if self.link else len(joints) - 1
        cid, body = self.cid, self.body

        def set_state(q):
            for i, v in zip(self.indices, q):
                pb.resetJointState(body, i, float(v), physicsClientId=cid)

        def pose(q, qd, qdd):
            set_state(q)
            return pb.getLinkState(body, link, computeForwardKinematics=True,
                                   physicsClientId=cid)

        zero = [0.0] * len(self.indices)
        self.ops = {
            'frame_pose': pose,
            'jacobian': lambda q, qd, qdd: pb.calculateJacobian(
                body, link, [0, 0, 0], list(q), zero, zero, physicsClientId=cid),
            'gravity': lambda q, qd, qdd: pb.calculateInverseDynamics(
                body, list(q), zero, zero, physicsClientId=cid),
            'inverse_dynamics': lambda q, qd, qdd: pb.calculateInverseDynamics(
                body, list(q), list(qd), list(qdd), physicsClientId=cid),
            'mass_matrix': lambda q, qd, qdd: pb.calculateMassMatrix(body, list(q),
                                                                     physicsClientId=cid),
        }

    def state(self, q, qd, qdd):
        """Our state in this library's joint order and representation."""
        def pick(x):
            return [float(x[i]) if i is not None else 0.0 for i in self.index]
        return pick(q), pick(qd), pick(qdd)


class MuJoCo:
    """MuJoCo, compiling the URDF."""

    name = 'mujoco'

    def __init__(self, model, tip, path):
        import mujoco
        self.mj = mujoco
        self.m = m = mujoco.MjModel.from_xml_path(kinematic_copy(path))
        self.d = d = mujoco.MjData(m)
        names = [mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_JOINT, i) for i in range(m.njnt)]
        self.index = [model.joint_names.index(n) if n in model.joint_names else None
                      for n in names]
        body = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, tip)
        self.notes = {} if body >= 0 else {'frame_pose': f'{tip} merged away by the compiler'}
        body = body if body >= 0 else m.nbody - 1
        jacp, jacr = np.zeros((3, m.nv)), np.zeros((3, m.nv))
        M = np.zeros((m.nv, m.nv))

        def load(q, qd, qdd):
            d.qpos[:], d.qvel[:], d.qacc[:] = q, qd, qdd

        def pose(q, qd, qdd):
            load(q, qd, qdd)
            mujoco.mj_kinematics(m, d)
            return d.xpos[body], d.xmat[body]

        def jac(q, qd, qdd):
            load(q, qd, qdd)
            mujoco.mj_kinematics(m, d)
            mujoco.mj_comPos(m, d)
            mujoco.mj_jacBody(m, d, jacp, jacr, body)
            return jacp, jacr

        def rne(q, qd, qdd, acc=True):
            load(q, qd, qdd)
            mujoco.mj_kinematics(m, d)
            mujoco.mj_comPos(m, d)
            out = np.zeros(m.nv)
            mujoco.mj_rne(m, d, int(acc), out)
            return out

        def mass(q, qd, qdd):
            load(q, qd, qdd)
            mujoco.mj_fwdPosition(m, d)
            if hasattr(d, 'qM'):                 # MuJoCo < 3.3: mj_fullM(m, dst, qM)
                mujoco.mj_fullM(m, M, d.qM)
            else:                                # MuJoCo >= 3.3: mj_fullM(m, d, dst)
                mujoco.mj_fullM(m, d, M)
            return M

        def fd(q, qd, tau):
            d.qpos[:], d.qvel[:], d.qfrc_applied[:] = q, qd, tau
            mujoco.mj_forward(m, d)
            return d.qacc

        self.ops = {
            'frame_pose': pose,
            'all_frame_poses': lambda q, qd, qdd: (load(q, qd, qdd), mujoco.mj_kinematics(m, d)),
            'jacobian': jac,
            'gravity': lambda q, qd, qdd: rne(q, np.zeros_like(qd), np.zeros_like(qdd), False),
            'inverse_dynamics': rne,
            'mass_matrix': mass,
            'forward_dynamics': fd,
        }

    def state(self, q, qd, qdd):
        """Our state in this library's joint order and representation."""
        def pick(x):
            return np.array([x[i] if i is not None else 0.0 for i in self.index])
        return pick(q), pick(qd), pick(qdd)


class IKPy:
    """ikpy (kinematic chains only)."""

    name = 'ikpy'

    def __init__(self, model, tip, path):
        import ikpy.chain
        with warnings.catch_warnings():
            warnings.simplefilter('ignore')
            self.chain = ikpy.chain.Chain.from_urdf_file(
                kinematic_copy(path), base_elements=[model.root_link], last_link_vector=None,
                name='bench')
        self.names = [link.name for link in self.chain.links]
        self.index = [model.joint_names.index(n) if n in model.joint_names else None
                      for n in self.names]
        self.notes = {op: 'kinematics only' for op in OPERATIONS
                      if op not in ('frame_pose', 'all_frame_poses')}
        self.ops = {
            'frame_pose': lambda q, qd, qdd: self.chain.forward_kinematics(q),
            'all_frame_poses': lambda q, qd, qdd: self.chain.forward_kinematics(
                q, full_kinematics=True),
        }

    def state(self, q, qd, qdd):
        """Our state in this library's joint order and representation."""
        return np.array([q[i] if i is not None else 0.0 for i in self.index]), None, None


def urdf_chain(path, tip):
    """The URDF's joints from its root link to ``tip``, root first (as kdl_parser chains them),
    and all its links.
    """
    from ros_dynamics.engine.urdf import parse_urdf, read_urdf_file
    _, links, joints, _ = parse_urdf(read_urdf_file(path))
    parent_joint = {j.child: j for j in joints}
    chain = []
    link = tip
    while link in parent_joint:
        chain.append(parent_joint[link])
        link = parent_joint[link].parent
    return chain[::-1], links


PYKDL_PATHS = ('/usr/lib/python3/dist-packages',)


def import_pykdl():
    """PyKDL: importable as it is, else Debian's python3-pykdl loaded from its file (it is built
    for the system Python 3.11, whose ABI this interpreter shares).
    """
    try:
        import PyKDL
        return PyKDL
    except ImportError:
        pass
    import glob
    import importlib.util
    import sys
    tag = f'cpython-{sys.version_info.major}{sys.version_info.minor}'
    for folder in PYKDL_PATHS:
        for path in glob.glob(os.path.join(folder, f'PyKDL.{tag}*.so')):
            spec = importlib.util.spec_from_file_location('PyKDL', path)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            sys.modules['PyKDL'] = module
            return module
    raise ImportError('PyKDL is not installed (Debian: apt-get install python3-pykdl)')


class PyKDL:
    """Orocos KDL through PyKDL (Debian's python3-pykdl), on the chain from the root to the tip,
    built as kdl_parser builds it from a URDF.
    """

    name = 'pykdl'

    def __init__(self, model, tip, path):
        kdl = self.kdl = import_pykdl()
        chain_joints, links = urdf_chain(path, tip)
        inertial = {link.name: link.inertial for link in links}
        self.chain = chain = kdl.Chain()
        names = []
        for j in chain_joints:
            T = j.origin
            frame = kdl.Frame(kdl.Rotation(*T[:3, :3].ravel().tolist()),
                              kdl.Vector(*T[:3, 3].tolist()))
            if j.type == 'fixed':
                joint = kdl.Joint(j.name, kdl.Joint.Fixed)
            else:
                axis = T[:3, :3] @ j.axis
                kind = kdl.Joint.TransAxis if j.type == 'prismatic' else kdl.Joint.RotAxis
                joint = kdl.Joint(j.name, frame.p, kdl.Vector(*axis.tolist()), kind)
                names.append(j.name)
            body = inertial.get(j.child)
            if body is not None and body.mass > 0:
                I = body.inertia
                rbi = kdl.RigidBodyInertia(body.mass, kdl.Vector(*body.com.tolist()),
                                           kdl.RotationalInertia(I[0, 0], I[1, 1], I[2, 2],
                                                                 I[0, 1], I[0, 2], I[1, 2]))
            else:
                rbi = kdl.RigidBodyInertia()
            chain.addSegment(kdl.Segment(j.child, joint, frame, rbi))
        self.index = [model.joint_names.index(n) if n in model.joint_names else None
                      for n in names]
        n = chain.getNrOfJoints()
        g = kdl.Vector(*model.settings.gravity.tolist())
        fk = kdl.ChainFkSolverPos_recursive(chain)
        jac = kdl.ChainJntToJacSolver(chain)
        dyn = kdl.ChainDynParam(chain, g)
        rne = kdl.ChainIdSolver_RNE(chain, g)
        # LMA weighs orientation by 0.01: a tight eps so that both errors reach 1e-5.
        self.lma = kdl.ChainIkSolverPos_LMA(chain, 1e-10, 500, 1e-15)
        frame, J, M = kdl.Frame(), kdl.Jacobian(n), kdl.JntSpaceInertiaMatrix(n)
        tau = kdl.JntArray(n)
        wrenches = [kdl.Wrench() for _ in range(chain.getNrOfSegments())]
        self.notes = {'all_frame_poses': 'one JntToCart call per segment',
                      'forward_dynamics': 'no forward-dynamics solver in this PyKDL'}
        self.ops = {
            'frame_pose': lambda q, qd, qdd: fk.JntToCart(q, frame),
            'jacobian': lambda q, qd, qdd: jac.JntToJac(q, J),
            'gravity': lambda q, qd, qdd: dyn.JntToGravity(q, tau),
            'inverse_dynamics': lambda q, qd, qdd: rne.CartToJnt(q, qd, qdd, wrenches, tau),
            'mass_matrix': lambda q, qd, qdd: dyn.JntToMass(q, M),
        }

    def array(self, values):
        """A KDL JntArray of the chain's joints from our joint vector."""
        out = self.kdl.JntArray(len(self.index))
        for k, i in enumerate(self.index):
            out[k] = float(values[i]) if i is not None else 0.0
        return out

    def state(self, q, qd, qdd):
        """Our state as KDL joint arrays."""
        return self.array(q), self.array(qd), self.array(qdd)


class TracIK:
    """TRAC-IK (TRACLabs' C++: KDL's Newton-Raphson and an NLopt SQP raced in two threads) through
    the pytracik bindings, solve type Speed, on the chain from the root link to the tip -- so its
    targets, given in the chain's base link, are our world-frame targets.

    Its URDF reader misreads some limits (all zero on example-robot-data's panda and tiago,
    float32-rounded elsewhere): it is given the model's limits, a continuous joint's as the
    +-FLT_MAX its own reader uses for them. ``epsilon`` bounds each component of its pose error
    (position [m] and rotation vector [rad]) separately.
    """

    name = 'TRAC-IK (C++)'

    def __init__(self, model, tip, path, timeout, epsilon):
        import pytracik
        self.pytracik = pytracik
        with open(path) as f:
            urdf = f.read()
        self.solver = pytracik.TRAC_IK(model.root_link, tip, urdf, float(timeout), float(epsilon),
                                       pytracik.SolveType.Speed)
        names = [j.name for j in urdf_chain(path, tip)[0] if j.type != 'fixed']
        self.index = np.array([model.joint_names.index(n) for n in names], dtype=int)
        if pytracik.get_num_joints(self.solver) != len(self.index):
            raise RuntimeError(f'TRAC-IK chain of {pytracik.get_num_joints(self.solver)} joints, '
                               f'expected {names}')
        unbounded = float(np.finfo(np.float32).max)
        lower = np.nan_to_num(model.lower_limits[self.index], neginf=-unbounded)
        upper = np.nan_to_num(model.upper_limits[self.index], posinf=unbounded)
        pytracik.set_joint_limits(self.solver, lower.tolist(), upper.tolist())

    def solve(self, q_seed, position, quat_xyzw):
        """Our joint vector with the chain's joints solved from ``q_seed`` (nq,) for the target
        ``position`` (3,) and ``quat_xyzw`` (4,), or None when TRAC-IK reports no solution.
        """
        out = self.pytracik.ik(self.solver, q_seed[self.index], *position, *quat_xyzw)
        if out[0] < 0:
            return None
        q = q_seed.copy()
        q[self.index] = out[1:]
        return q


class Subproblems:
    """An analytic peer built on subproblem decomposition (EAIK, IK-Geo): its model of the arm
    built from our forward kinematics at the zero configuration (axes ``H``, offsets ``P``;
    their tool frame is base-aligned at zero, so targets are turned by the tool's zero
    rotation ``R0`` first -- EAIK's own URDF reader drops the tool frame). Every solution it
    returns that is exact (not least squares) is shifted by whole turns toward the seed inside
    the limits; :meth:`solve` gives them nearest the seed first.
    """

    #: Whether the peer needs the points on meeting axes placed where they meet (IK-Geo).
    snapped = False

    def __init__(self, model, tip):
        from ros_dynamics.engine import IKSolver, ik_analytic
        solver = IKSolver(model)
        chain = solver.chain(tip)
        g = ik_analytic.geometry(chain, np.zeros(len(chain.moved)),
                                 np.ones(len(chain.moved), dtype=bool))
        if g is None:
            raise RuntimeError('not a chain of six revolute joints')
        self.family = solver.family(tip)
        if self.snapped and self.family is not None:
            g = self.family.geometry       # the points on the axes moved to where they meet
        self.H, self.R0, self.index = g.h, g.R0, chain.moved
        self.P = np.vstack([g.o[0], np.diff(g.o, axis=0), g.p0 - g.o[5]])
        self.lower, self.upper = model.lower_limits[self.index], model.upper_limits[self.index]
        self.in_limits = ik_analytic.in_limits

    def solve(self, q_seed, T):
        """Every exact in-limit solution (nq,) for ``T`` (4, 4), nearest ``q_seed`` first, and
        the seconds the peer's own call took (the shifting into the limits is ours, untimed).
        """
        R, p = T[:3, :3] @ self.R0.T, T[:3, 3]
        start = time.perf_counter()
        raw = self.raw(R, p)
        seconds = time.perf_counter() - start
        return self._ranked(q_seed, raw), seconds

    def _ranked(self, q_seed, raw):
        if not raw:
            return []
        X, inside, _ = self.in_limits(np.array(raw), q_seed[self.index], self.lower,
                                      self.upper)
        out = []
        for x in X[inside]:
            if all(np.abs(x - y).max() > 1e-6 for y in out):
                out.append(x)
        out.sort(key=lambda x: np.linalg.norm(x - q_seed[self.index]))
        qs = []
        for x in out:
            q = q_seed.copy()
            q[self.index] = x
            qs.append(q)
        return qs


class EAIK(Subproblems):
    """EAIK (Ostermeier et al., C++ via pybind11): finds the decomposition itself."""

    name = 'EAIK (C++)'

    def __init__(self, model, tip):
        super().__init__(model, tip)
        from eaik.IK_HP import HPRobot
        self.robot = HPRobot(self.H, self.P)
        if not self.robot.hasKnownDecomposition():
            raise RuntimeError(f'no decomposition ({self.robot.getKinematicFamily()})')

    def raw(self, R, p):
        """EAIK's exact solutions (6,) for the tool-turned rotation ``R`` and position ``p``."""
        pose = np.eye(4)
        pose[:3, :3], pose[:3, 3] = R, p
        sol = self.robot.IK(pose)
        return [q for q, ls in zip(sol.Q, sol.is_LS) if not ls]


class IKGeo(Subproblems):
    """IK-Geo (Elias and Wen, Rust via PyO3): the family is chosen by hand (ours), and it reads
    rotation matrices column-major (the transpose is passed).
    """

    name = 'IK-Geo (Rust)'
    snapped = True
    FAMILIES = {('three_parallel', ''): 'three_parallel_two_intersecting',
                ('three_parallel_offset', ''): 'three_parallel',
                ('spherical_wrist', 'parallel'): 'spherical_two_parallel',
                ('spherical_wrist', 'meeting'): 'spherical_two_intersecting'}

    def __init__(self, model, tip):
        super().__init__(model, tip)
        import ik_geo
        f = self.family
        if f is None or f.geometry.reversed:
            raise RuntimeError('no family IK-Geo solves forwards')
        self.robot = getattr(ik_geo.Robot, self.FAMILIES[(f.name, f.shoulder)])(
            self.H.tolist(), self.P.tolist())

    def raw(self, R, p):
        """IK-Geo's exact solutions (6,) for the tool-turned rotation ``R`` and position ``p``."""
        return [q for q, ls in self.robot.get_ik(R.T.tolist(), p.tolist()) if not ls]


class PoseCheck:
    """An IK answer checked independently of ros_dynamics: Pinocchio's forward kinematics of the
    tip at the answer, against the target.
    """

    def __init__(self, model, tip, path):
        import pinocchio as pin
        self.pin, self.model = pin, model
        self.pm = pm = pin.buildModelFromUrdf(path)
        self.pd = pm.createData()
        # A link and the joint into it may share a name: the link's frame.
        self.frame = pm.getFrameId(tip, pin.BODY) if pm.existFrame(tip, pin.BODY) else \
            pm.getFrameId(tip)

    def errors(self, q, T_world_target):
        """Whether ``q`` (nq,) is inside the limits, and the pose error of the tip there: the
        position error (3,) [m] and the rotation vector of ``R_target R^T`` (3,) [rad], in world
        axes.
        """
        m, pin = self.model, self.pin
        inside = bool(np.all(q >= m.lower_limits - 1e-9) and np.all(q <= m.upper_limits + 1e-9))
        pin.framesForwardKinematics(self.pm, self.pd, _pin_q(pin, self.pm, m, q))
        T = self.pd.oMf[self.frame]
        dp = T_world_target[:3, 3] - T.translation
        dtheta = pin.log3(T_world_target[:3, :3] @ T.rotation.T)
        return inside, dp, dtheta
