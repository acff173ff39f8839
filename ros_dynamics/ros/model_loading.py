"""Robot models for the node: where a description comes from, bounding it, building it (off the
executor), refusing it.

Sources: the ``robot_description`` parameter (as robot_state_publisher takes it), else the
``urdf_file`` parameter, else the ``robot_description`` topic (which robot_state_publisher
publishes). A description larger than the limits (:func:`check_limits`) or that does not build
is refused with the reason (:class:`DescriptionRefused`); the caller keeps its previous model.
:class:`DescriptionBuilder` builds models on a thread of its own, so the node keeps answering
joint states with the old model meanwhile.
"""
import re
import threading

from ..engine import DynamicsError, RobotModel
from .newest_worker import NewestWorker

#: Source named in logs for a description received on the topic.
TOPIC_SOURCE = 'the robot_description topic'
_LINK = re.compile(r'<link[\s/>]')
_JOINT = re.compile(r'<joint[\s/>]')


class DescriptionRefused(Exception):
    """A robot description that does not give a model; the message says why."""


def initial_description(robot_description, urdf_file):
    """The description to start with and its source: ``(xml, source)``, or ``(None, None)``
    when neither parameter holds one (then the topic will). Raises :class:`DescriptionRefused`
    when ``urdf_file`` cannot be read.
    """
    if robot_description:
        return robot_description, 'the robot_description parameter'
    if urdf_file:
        try:
            with open(urdf_file, encoding='utf-8') as f:
                return f.read(), f'urdf_file {urdf_file!r}'
        except (OSError, UnicodeDecodeError) as err:
            raise DescriptionRefused(f'cannot read urdf_file {urdf_file!r}: {err}') from None
    return None, None


def check_limits(xml, limits):
    """Refuse (:class:`DescriptionRefused`) a description above the
    :class:`~ros_dynamics.ros.settings.InputLimits`: its size in bytes, its ``<link>`` and
    ``<joint>`` elements (counted in the text before any parsing; a ``<joint>`` inside a
    ``<transmission>`` counts too).
    """
    size = len(xml.encode('utf-8', 'surrogatepass'))
    if size > limits.description_bytes:
        raise DescriptionRefused(f'{size:,} bytes, more than description.max_bytes '
                                 f'({limits.description_bytes:,})')
    for pattern, what, limit in ((_LINK, 'links', limits.description_links),
                                 (_JOINT, 'joints', limits.description_joints)):
        count = sum(1 for _ in zip(range(limit + 1), pattern.finditer(xml)))
        if count > limit:
            raise DescriptionRefused(f'more than description.max_{what} ({limit:,}) {what}')


def build_model(xml, *, strict, root_joint=''):
    """A :class:`~ros_dynamics.engine.RobotModel` from URDF text; ``strict`` refuses physically
    impossible inertials; ``root_joint`` ('', 'floating' or 'planar') joins the root link to the
    world. Raises :class:`DescriptionRefused` with the engine's reason.
    """
    try:
        return RobotModel.from_urdf_string(xml, strict=strict, root_joint=root_joint or None)
    except DynamicsError as err:
        raise DescriptionRefused(str(err)) from None
    except RecursionError:
        raise DescriptionRefused('the tree is too deep to build') from None


class DescriptionBuilder:
    """Builds models on a thread of its own, one at a time; the newest description wins.

    :meth:`submit` queues a description (replacing one queued and not started); when a build
    ends and no newer description is waiting, its outcome is kept and ``notify()`` is called
    (from the builder's thread): the node then :meth:`take` s it on its executor. An outcome
    whose description was replaced meanwhile is thrown away.
    """

    def __init__(self, build, notify):
        """``build(xml)`` returns a model or raises; ``notify()`` says an outcome is ready."""
        self._build = build
        self._notify = notify
        self._lock = threading.Lock()
        self._latest = None           # the job (xml, source) submitted last
        self._outcome = None          # (model or None, error or None, source)
        self._worker = NewestWorker(self._run, 'description_builder')

    def submit(self, xml, source):
        """Build ``xml`` (from ``source``, named in logs) after the build under way, if any."""
        job = (xml, source)
        with self._lock:
            self._latest = job
            self._outcome = None
        self._worker.submit(job)

    def take(self):
        """The latest outcome ``(model, error, source)`` once, else None."""
        with self._lock:
            outcome, self._outcome = self._outcome, None
        return outcome

    def _run(self, job):
        xml, source = job
        try:
            outcome = (self._build(xml), None, source)
        except Exception as err:          # refused, or anything else: reported, not raised
            outcome = (None, err, source)
        del xml
        with self._lock:
            if self._latest is not job:
                return                       # replaced meanwhile: thrown away
            self._latest = None
            self._outcome = outcome
        self._notify()
