# Targets mirror CI. Every target runs inside .venv, created on demand by dev.py.
PY := .venv/bin/python
PROTO_OUT := durabletask/_proto

.PHONY: venv fmt lint typecheck test bench proto demo

venv:
	python3 dev.py run true

fmt: venv
	$(PY) -m ruff format durabletask emulator tests bench samples
	$(PY) -m ruff check --fix durabletask emulator tests bench samples

lint: venv
	$(PY) -m ruff check durabletask emulator tests bench samples

typecheck: venv
	$(PY) -m mypy

test: venv
	python3 dev.py test

bench: venv
	python3 dev.py bench

demo: venv
	python3 dev.py demo

# Regenerates the checked-in stubs; pinned to the grpcio-tools version in pyproject.toml.
proto: venv
	$(PY) -m grpc_tools.protoc -I protos --python_out=$(PROTO_OUT) --pyi_out=$(PROTO_OUT) \
		--grpc_python_out=$(PROTO_OUT) protos/orchestrator_service.proto
	sed -i 's/^import orchestrator_service_pb2 as/from . import orchestrator_service_pb2 as/' \
		$(PROTO_OUT)/orchestrator_service_pb2_grpc.py
