# The two set-up commands (README.md): `make demo` runs the main job, `make test` runs the whole suite.
# Both create .venv on a fresh machine and install the project with its extras.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: venv test demo clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[triton,cutile,test]'
	touch $(STAMP)

venv: $(STAMP)

test: $(STAMP)
	$(PY) -m pytest -q -p no:cacheprovider tests

demo: $(STAMP)
	$(VENV)/bin/intent-eqsat examples --out build/demo

clean:
	rm -rf $(VENV) build
