# Targets mirror CI. Every target runs inside .venv, created on demand by dev.py.
PY := .venv/bin/python

.PHONY: venv fmt lint typecheck test bench proto demo docs

venv:
	python3 dev.py run true

fmt: venv
	$(PY) -m ruff format durabletask emulator tests bench samples docs
	$(PY) -m ruff check --fix durabletask emulator tests bench samples docs

lint: venv
	$(PY) -m ruff check durabletask emulator tests bench samples docs

typecheck: venv
	$(PY) -m mypy

test: venv
	python3 dev.py test

bench: venv
	python3 dev.py bench

demo: venv
	python3 dev.py demo

# Regenerates both distributions' checked-in stubs; pinned to the grpcio-tools version in pyproject.toml.
proto: venv
	$(PY) protos/generate.py

# The documentation site, strictly (python3 dev.py docs --serve serves it while editing).
docs: venv
	python3 dev.py docs
