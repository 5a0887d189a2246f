# louder: `make demo` sets up and runs the demo; `make test` sets up and runs the tests (and builds the docs
# strictly); `make docs` builds the documentation site into site/.
# PYTHON is the interpreter the venv is made with (default: python3 on your PATH) and VENV where it goes, e.g.
#   make test PYTHON=python3.13 VENV=.venv-3.13
# The venv gets the versions the suite last passed with (constraints.txt); CONSTRAINTS= resolves afresh.
PYTHON ?= python3
VENV ?= .venv
CONSTRAINTS ?= constraints.txt
PY := $(VENV)/bin/python
PIN := $(if $(CONSTRAINTS),--constraint $(CONSTRAINTS))
# llama-cpp-python builds from source; the default native build crashes on CPUs with AMX,
# so build for a portable AVX2 target (and without the multimodal library, which louder never loads).
export CMAKE_ARGS := -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DLLAVA_BUILD=OFF
# Its wheel holds no Python extension (llama.cpp's libraries, loaded with ctypes: tagged py3-none), so it
# is built once into WHEELS and every venv, on any Python, installs it from there (pip's own cache
# keeps a build per Python).
# The ~200 packages of louder and its test extra are installed by uv (from PyPI, into this venv): it fetches
# and unpacks them in parallel, ~20 s where pip took ~2 min (CI sets up twice). It installs the same versions
# (the constraints pin them) but reads neither pip's configuration (behind a private index, set
# UV_INDEX_URL as you set pip's; --native-tls: it trusts the system's certificates, as pip set to them does)
# nor pip's cache, and builds a source release again whenever the index answers anew: so pip builds what
# comes as source on some Pythons (humanleague on 3.11) into WHEELS too, where its cache keeps the build.
# Where uv fails, pip installs as before. --compile-bytecode: as pip does, the packages' bytecode is written at
# install (~20 s on 2 cores), not by the suite's first processes, each worker compiling the same modules.
WHEELS ?= .wheels

.PHONY: setup demo test test-fast bench docs docs-serve constraints clean

$(VENV)/.installed: pyproject.toml $(CONSTRAINTS)
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade $(PIN) pip
	mkdir -p $(WHEELS)
	$(PY) -m pip wheel --quiet $(PIN) --no-deps --find-links $(WHEELS) --wheel-dir $(WHEELS) llama-cpp-python humanleague
	{ $(PY) -m pip install --quiet $(PIN) uv \
	  && $(VENV)/bin/uv pip install --quiet --native-tls --compile-bytecode --python $(PY) $(PIN) --find-links $(WHEELS) \
	     -e ".[test]"; } \
	|| { echo "uv could not install (above): pip installs instead (~2 min)"; \
	     $(PY) -m pip install --quiet $(PIN) --find-links $(WHEELS) -e ".[test]"; }
	touch $@

setup: $(VENV)/.installed

# PYTHONDONTWRITEBYTECODE emptied (as for the suite, below): louder itself (installed editable) is compiled by its
# first run, and a machine that sets the variable would otherwise compile it at every start.
demo: setup
	PYTHONDONTWRITEBYTECODE= $(VENV)/bin/louder demo

# The suite runs on every core (pytest-xdist): its tests are independent, and the embedded model's
# threads sleep while they wait, so two of its runs side by side share the cores. `-n auto` is one worker
# more than the cores (tests/conftest.py: a worker waiting on a subprocess or a server leaves its core to
# the extra one), and one BLAS thread per worker. loadfile: a file's
# tests run on one worker, which builds its module fixtures once, the files with slow tests first
# (tests/conftest.py); the 25 slowest tests are listed at the end.
# PYTHONDONTWRITEBYTECODE is emptied for the suite: with it set (some machines and CI images do) every
# process of the suite — each worker, each `louder` subprocess — compiles louder and rewrites the tests
# afresh instead of reading __pycache__ (git ignores it).
PYTEST := PYTHONDONTWRITEBYTECODE= $(PY) -m pytest -ra -n auto --dist loadfile --durations=25

test: setup
	$(PYTEST)

test-fast: setup
	$(PYTEST) -m "not slow"

bench: setup
	$(PY) benchmarks/run.py

# The site: a broken link, a missing page or any warning fails the build (tests/test_docs.py runs it too).
docs: setup
	$(VENV)/bin/mkdocs build --strict --site-dir site

docs-serve: setup
	$(VENV)/bin/mkdocs serve

# constraints.txt from the venvs the suite passed in (one per Python; docs/getting-started/index.md), e.g.
#   make constraints VENVS=".venv-3.11 .venv-3.13"
VENVS ?= $(VENV)
constraints:
	python3 tools/constraints.py $(VENVS) > constraints.txt.new && mv constraints.txt.new constraints.txt

clean:
	rm -rf $(VENV) $(WHEELS) louder-demo .pytest_cache site
