"""Middleware settings of the node's process: Fast DDS readers that free what they received.

rmw_fastrtps gives every reader a pool of sample buffers that grow to the largest sample ever
received and never shrink: after one joint state with a million names the node would hold tens
of MB (one buffer per sample queued at once, up to the subscription's depth) for the rest of its
life. :data:`PROFILE` restores what rmw_fastrtps sets by default for every entity, except that
readers take memory per sample and free it once the sample is taken (``DYNAMIC``).

It applies only where nobody else configures Fast DDS: with rmw_fastrtps (the default RMW), and
none of ``RMW_FASTRTPS_USE_QOS_FROM_XML``, ``RMW_FASTRTPS_PUBLICATION_MODE``,
``FASTRTPS_DEFAULT_PROFILES_FILE``, ``FASTDDS_DEFAULT_PROFILES_FILE`` set, nor a default
profiles file in the working directory. It must run before ``rclpy.init``.
"""
import os

#: The Fast DDS XML profile (shipped next to this module).
PROFILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'fastdds_profile.xml')
#: Environment variables by which a user configures Fast DDS themselves.
USER_SETTINGS = ('RMW_FASTRTPS_USE_QOS_FROM_XML', 'RMW_FASTRTPS_PUBLICATION_MODE',
                 'FASTRTPS_DEFAULT_PROFILES_FILE', 'FASTDDS_DEFAULT_PROFILES_FILE')
#: Files Fast DDS loads from the working directory when present.
USER_FILES = ('DEFAULT_FASTRTPS_PROFILES.xml', 'DEFAULT_FASTDDS_PROFILES.xml')
#: RMW implementations built on Fast DDS ('' is the default RMW, rmw_fastrtps_cpp).
FASTDDS_RMWS = ('', 'rmw_fastrtps_cpp', 'rmw_fastrtps_dynamic_cpp')


def use_releasing_readers(environ=os.environ, cwd='.'):
    """Point Fast DDS at :data:`PROFILE` in ``environ`` unless the RMW is another one or the
    user configures Fast DDS; returns True when applied.
    """
    if environ.get('RMW_IMPLEMENTATION', '') not in FASTDDS_RMWS:
        return False
    if any(environ.get(key) for key in USER_SETTINGS):
        return False
    if any(os.path.isfile(os.path.join(cwd, name)) for name in USER_FILES):
        return False
    if not os.path.isfile(PROFILE):
        return False
    environ['RMW_FASTRTPS_USE_QOS_FROM_XML'] = '1'
    environ['FASTRTPS_DEFAULT_PROFILES_FILE'] = PROFILE    # Fast DDS 2 (Humble, Jazzy)
    environ['FASTDDS_DEFAULT_PROFILES_FILE'] = PROFILE     # Fast DDS 3 (Kilted and newer)
    return True
