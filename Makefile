# louder: `make demo` sets up and runs the demo; `make test` sets up and runs the tests (and builds the docs
# strictly); `make docs` builds the documentation site into site/.
VENV ?= .venv
PY := $(VENV)/bin/python
# llama-cpp-python builds from source; the default native build crashes on CPUs with AMX,
# so build for a portable AVX2 target.
export CMAKE_ARGS := -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON

.PHONY: setup demo test test-fast bench docs docs-serve clean

$(VENV)/.installed: pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[test]"
	touch $@

setup: $(VENV)/.installed

demo: setup
	$(VENV)/bin/louder demo

test: setup
	$(PY) -m pytest -ra

test-fast: setup
	$(PY) -m pytest -ra -m "not slow"

bench: setup
	$(PY) benchmarks/run.py

# The site: a broken link, a missing page or any warning fails the build (tests/test_docs.py runs it too).
docs: setup
	$(VENV)/bin/mkdocs build --strict --site-dir site

docs-serve: setup
	$(VENV)/bin/mkdocs serve

clean:
	rm -rf $(VENV) louder-demo .pytest_cache site
