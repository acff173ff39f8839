"""``~/identify_payload``: record joint states while the robot moves, fit the payload, apply it.

:class:`IdentifyPayloadService` lives on the services node (its executor threads, a callback
group of its own, so neither joint states nor IK/FK wait for it). A request is checked (duration
finite, in (0, ``identify.max_duration``]; frame known and moved by a joint), then the node's
streaming path records the joint states with velocities and efforts into a bounded buffer
(:mod:`~ros_dynamics.ros.payload_recorder`) until their stamps span the duration; this thread
waits, then fits with :func:`~ros_dynamics.engine.identify_payload_from_positions` (the model's
settings as they were during the recording) and, when asked, applies the result as the node's
``payload.*`` parameters in one atomic change made on the node's own thread (validated by the
parameter callback like any change, one settings swap). One identification at a time: others
are answered ``BUSY`` at once. Joint states stopping for :data:`STALL_TIMEOUT` [s] of wall time
end a request with ``NO_DATA``.
"""
import concurrent.futures
import math
import queue
import threading

import numpy as np
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.parameter import Parameter

from ..engine import DynamicsError, InsufficientExcitationError
from ..engine.identification import identify_payload_from_positions
from .frame_names import FramePrefix
from .guard import guarded
from .kinematics_services import SERVICE_QOS, failure_response
from .payload_recorder import RecorderBusy
from .throttled_log import ThrottledLog, clip

#: Wall time [s] without a usable joint state after which a recording gives up.
STALL_TIMEOUT = 2.0
#: Wall time [s] the node's thread has to apply the parameters.
APPLY_TIMEOUT = 5.0
#: Samples of the smoothing fits at most (the engine's default) and fewest joint states fitted.
WINDOW = 51
MIN_SAMPLES = 21


class RequestError(Exception):
    """A request answered with ``code`` (a name of the service's constants) and a message."""

    def __init__(self, code, message):
        super().__init__(message)
        self.code = code


class OnNodeThread:
    """Runs functions on a node's executor thread (through a guard condition) for other
    threads, which wait for their results.
    """

    def __init__(self, node, guard):
        self._pending = queue.SimpleQueue()
        self._condition = node.create_guard_condition(guard(self._run))

    def call(self, function, timeout):
        """``function()`` run on the node's thread; raises TimeoutError after ``timeout`` [s]
        (it then never runs) and what it raised.
        """
        future = concurrent.futures.Future()
        self._pending.put((function, future))
        self._condition.trigger()
        try:
            return future.result(timeout)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise TimeoutError(f'the node did not answer within {timeout:g} s') from None

    def _run(self):
        while True:
            try:
                function, future = self._pending.get_nowait()
            except queue.Empty:
                return
            if future.set_running_or_notify_cancel():
                try:
                    future.set_result(function())
                except Exception as error:          # handed to the waiting thread
                    future.set_exception(error)


def requested_duration(duration, limit):
    """Seconds of a ``builtin_interfaces/Duration``, in (0, limit], else RequestError."""
    if not 0 <= duration.nanosec < 1_000_000_000:
        raise RequestError('INVALID_REQUEST', f'duration: nanosec must be below 1e9, got '
                                              f'{duration.nanosec}')
    seconds = duration.sec + 1e-9 * duration.nanosec
    if not (math.isfinite(seconds) and 0 < seconds <= limit):
        raise RequestError('INVALID_REQUEST', f'duration: expected more than 0 s and at most '
                                              f'identify.max_duration = {limit:g} s, got '
                                              f'{seconds:g} s')
    return seconds


def requested_frame(model, settings, frame_id):
    """The model frame a request names (``frame_prefix`` stripped; empty: ``identify.frame``,
    else the IK tip frame), checked to be moved by a joint.
    """
    frame = FramePrefix(settings.frame_prefix).to_frame(frame_id) \
        or settings.effort.identify_frame or settings.ik.tip_frame
    if frame not in model.frame_names:
        raise RequestError('INVALID_LINK_NAME', clip(
            f'unknown frame {frame[:200]!r}; valid: {list(model.frame_names)}', 900))
    if model.frame_body[model.frame_index(frame)] == 0:
        raise RequestError('INVALID_LINK_NAME', f'frame {frame!r} is fixed to the base; no '
                                                'joint carries a payload on it')
    return frame


def payload_parameters(estimate):
    """The ``payload.*`` parameters of a :class:`~ros_dynamics.engine.identification.
    PayloadEstimate` (inertia as ixx ixy ixz iyy iyz izz).
    """
    inertia = estimate.inertia
    return [Parameter('payload.frame', value=estimate.frame),
            Parameter('payload.mass', value=float(estimate.mass)),
            Parameter('payload.com', value=[float(c) for c in estimate.com]),
            Parameter('payload.inertia', value=[float(inertia[i, j]) for i, j in
                                                ((0, 0), (0, 1), (0, 2), (1, 1), (1, 2),
                                                 (2, 2))])]


def fill_response(model, estimate, t, frame_id, response):
    """The response fields of a successful fit."""
    v = model.actuated_v_index
    i = response.inertia
    i.m = float(estimate.mass)
    i.com.x, i.com.y, i.com.z = (float(c) for c in estimate.com)
    I_com = estimate.inertia
    i.ixx, i.ixy, i.ixz = float(I_com[0, 0]), float(I_com[0, 1]), float(I_com[0, 2])
    i.iyy, i.iyz, i.izz = float(I_com[1, 1]), float(I_com[1, 2]), float(I_com[2, 2])
    response.frame = frame_id
    response.joint_names = list(model.actuated_joint_names)
    response.residual_rms = estimate.residual_rms[v].tolist()
    response.payload_torque_rms = estimate.payload_torque_rms[v].tolist()
    response.condition_number = float(estimate.mass_com_condition_number)
    response.full_condition_number = float(estimate.condition_number)
    response.constrained = bool(estimate.constrained)
    response.samples = int(t.size)
    response.recorded_duration = float(t[-1] - t[0])
    response.success, response.error_code = True, type(response).SUCCESS
    response.message = (f'{estimate.mass:.4g} kg at {np.round(estimate.com, 4).tolist()} m in '
                        f'{estimate.frame} from {t.size} joint states over '
                        f'{t[-1] - t[0]:.3g} s; condition number '
                        f'{estimate.mass_com_condition_number:.3g}; efforts '
                        f'{1e3 * estimate.effort_delay:.2g} ms behind the positions')
    return response


class IdentifyPayloadService:
    """The ``~/identify_payload`` service of a dynamics node, on its services node."""

    def __init__(self, services_node, dynamics_node, recorder, diagnostics):
        self._node = dynamics_node
        self._recorder = recorder
        self._diagnostics = diagnostics
        self._log = ThrottledLog(services_node.get_logger())
        self._served = None                   # (model, settings), replaced whole
        self._busy = threading.Lock()
        try:
            from ros_dynamics_interfaces.srv import IdentifyPayload
        except ImportError:
            self.available = False
            return
        self.available = True
        self._on_node = OnNodeThread(dynamics_node, self._guard_for('identify_payload apply'))
        # Requests overlap (a second one is refused while the first records): reentrant, with
        # a thread of the services executor of its own.
        services_node.executor_threads = getattr(services_node, 'executor_threads', 1) + 1
        services_node.create_service(
            IdentifyPayload, dynamics_node.resolve_service_name('~/identify_payload'),
            guarded(self._on_request, 'identify_payload', self._log, diagnostics,
                    failure_response),
            qos_profile=SERVICE_QOS, callback_group=ReentrantCallbackGroup())

    def _guard_for(self, what):
        return lambda callback: guarded(callback, what, self._log, self._diagnostics)

    def serve(self, model, settings):
        """Answer with ``model`` and its node settings from now on (any thread)."""
        self._served = (model, settings)

    def _on_request(self, request, response):
        if not self._busy.acquire(blocking=False):
            return self._refuse(response, 'BUSY', 'another identification is running; '
                                                  'requests are served one at a time')
        try:
            return self._identify(request, response)
        except RequestError as err:
            return self._refuse(response, err.code, str(err))
        finally:
            self._busy.release()

    def _refuse(self, response, code, message):
        self._diagnostics.count('requests_refused')
        response.success = False
        response.error_code = getattr(type(response), code)
        response.message = message
        return response

    def _identify(self, request, response):
        served = self._served
        if served is None:
            raise RequestError('NO_MODEL', 'no robot model loaded yet')
        model, settings = served
        duration = requested_duration(request.duration, settings.effort.identify_max_duration)
        frame = requested_frame(model, settings, request.frame)
        try:
            recording = self._recorder.start(model, settings.dynamics, duration,
                                             settings.effort.identify_max_samples,
                                             settings.effort.max_stamp_gap)
        except RecorderBusy as err:
            raise RequestError('BUSY', str(err)) from None
        try:
            self._wait(recording, model)
        finally:
            self._recorder.finish(recording)
        t, q, tau = recording.arrays()
        if t.size < MIN_SAMPLES:
            raise RequestError('NO_DATA', f'{t.size} joint states with velocities and efforts '
                                          f'of every actuated joint were recorded; at least '
                                          f'{MIN_SAMPLES} are needed')
        window = min(WINDOW, (t.size // 3) | 1)
        try:
            estimate = identify_payload_from_positions(
                model, frame, t, q, tau, window=max(window, 5), friction=settings.effort.friction,
                max_condition=settings.effort.identify_max_condition)
        except InsufficientExcitationError as err:
            raise RequestError('INSUFFICIENT_EXCITATION', clip(str(err), 900)) from None
        except DynamicsError as err:
            raise RequestError('FAILURE', clip(str(err), 900)) from None
        if model.settings is not recording.dynamics:
            raise RequestError('INTERRUPTED', 'parameters changed during the fit')
        self._diagnostics.count('payloads_identified')
        fill_response(model, estimate, t, settings.frame_prefix + frame, response)
        self._log.info(f'identify_payload: {response.message}')
        if request.apply:
            self._apply(estimate, response)
        return response

    def _wait(self, recording, model):
        """Until the recording ends; RequestError when it was cut short or stalled."""
        while not recording.done.wait(0.05):
            served = self._served
            if served is None or served[0] is not model:
                recording.stop('the robot description was replaced during the recording')
            elif recording.stalled(STALL_TIMEOUT):
                code = 'NO_DATA' if recording.samples == 0 else 'INTERRUPTED'
                raise RequestError(code, f'no joint state with velocities and efforts of every '
                                         f'actuated joint for {STALL_TIMEOUT:g} s (after '
                                         f'{recording.samples} recorded)')
        if recording.problem is not None:
            raise RequestError('INTERRUPTED', recording.problem)

    def _apply(self, estimate, response):
        parameters = payload_parameters(estimate)
        try:
            result = self._on_node.call(
                lambda: self._node.set_parameters_atomically(parameters), APPLY_TIMEOUT)
        except TimeoutError as err:
            result = None
            reason = str(err)
        else:
            reason = result.reason
        if result is not None and result.successful:
            response.applied = True
            response.message += '; applied as the payload.* parameters'
            return
        response.success = False
        response.error_code = type(response).NOT_APPLIED
        response.message += f'; not applied: {reason}'
        self._diagnostics.count('requests_refused')

