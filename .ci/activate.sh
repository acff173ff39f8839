# Source this file (bash) to use the environment `make env` built: the venv, the built interface
# package and the ROS 2 settings the tests and the demo use (RD_VENV: another one the bootstrap
# built, as `make test-apt-versions` does).
_RD_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
_RD_VENV="${RD_VENV:-$_RD_ROOT/.venv}"
# shellcheck disable=SC1091
source "$_RD_VENV/bin/activate"
if [ -z "${ROS_DISTRO:-}" ]; then
    export AMENT_PREFIX_PATH="$_RD_VENV${AMENT_PREFIX_PATH:+:$AMENT_PREFIX_PATH}"
fi
# shellcheck disable=SC1091
source "$_RD_VENV/ros_install/local_setup.bash"
export RMW_IMPLEMENTATION="${RMW_IMPLEMENTATION:-rmw_fastrtps_cpp}"
# What the nodes, the tests and the plots write for themselves stays in the checkout (by default
# ~/.ros/log, ~/.config/matplotlib, ~/.cache/matplotlib and ~/.cache/fontconfig); settings of
# your own are kept.
export ROS_LOG_DIR="${ROS_LOG_DIR:-$_RD_VENV/ros_log}"
export MPLCONFIGDIR="${MPLCONFIGDIR:-$_RD_VENV/cache/matplotlib}"
export XDG_CACHE_HOME="${XDG_CACHE_HOME:-$_RD_VENV/cache}"
export PIP_CACHE_DIR="${PIP_CACHE_DIR:-$_RD_VENV/cache/pip}"
unset _RD_ROOT _RD_VENV
