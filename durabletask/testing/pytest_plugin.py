"""The pytest plugin (entry point ``pytest11``: installing the package is enough): an in-process backend per session,
emptied before each test, with clients and a worker factory bound to it.

Fixtures (prefixed so they cannot clash with a project's own):

``durabletask_backend``
    The session's :class:`~durabletask.testing.InMemoryOrchestrationBackend`, reset before the test. With time
    skipping (the ``durabletask_time_skipping`` marker, or ``durabletask_time_skipping = true`` in the ini file)
    its clock jumps to the next due timer whenever no work is leased or ready; ``advance_time`` moves it too.
``durabletask_client`` / ``durabletask_async_client``
    A ``TaskHubGrpcClient`` / ``AsyncTaskHubGrpcClient`` connected to it, closed after the test (the async one needs
    pytest-asyncio).
``durabletask_worker``
    ``durabletask_worker(orchestrators=[...], activities=[...], entities=[...])`` returns a started worker connected
    to the backend (``start=False`` leaves starting to the test); every worker it made is stopped after the test.

Nothing is imported or started until a test asks for one of them: sessions that do not use them pay nothing.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from durabletask.client import AsyncTaskHubGrpcClient, TaskHubGrpcClient
    from durabletask.testing.in_memory_backend import InMemoryOrchestrationBackend
    from durabletask.worker import TaskHubGrpcWorker

MARKER = "durabletask_time_skipping"
INI_OPTION = "durabletask_time_skipping"


def pytest_addoption(parser: pytest.Parser) -> None:
    """Registers the ``durabletask_time_skipping`` ini option: time skipping for every test's backend.

    Args:
        parser: pytest's option parser.
    """
    parser.addini(
        INI_OPTION,
        type="bool",
        default=False,
        help="run the durabletask_backend fixture with time skipping in every test (the marker overrides it)",
    )


def pytest_configure(config: pytest.Config) -> None:
    """Registers the ``durabletask_time_skipping`` marker, which turns time skipping on (or off) for one test.

    Args:
        config: pytest's configuration.
    """
    config.addinivalue_line(
        "markers",
        f"{MARKER}(enabled=True): the test's durabletask_backend jumps its clock to the next due timer whenever "
        "no work is leased or ready",
    )


class _Backends:
    """The session's backends, one per time-skipping setting, each started the first time a test needs it."""

    def __init__(self) -> None:
        self._made: dict[bool, InMemoryOrchestrationBackend] = {}

    def get(self, time_skipping: bool) -> InMemoryOrchestrationBackend:
        found = self._made.get(time_skipping)
        if found is None:
            from durabletask.testing.in_memory_backend import create_test_backend

            found = self._made[time_skipping] = create_test_backend(port=0, time_skipping=time_skipping)
        return found

    def stop(self) -> None:
        for backend in self._made.values():
            backend.stop()
        self._made.clear()


@pytest.fixture(scope="session")
def durabletask_backends() -> Iterator[_Backends]:
    """The session's in-process backends (use ``durabletask_backend`` in tests)."""
    backends = _Backends()
    yield backends
    backends.stop()


def _time_skipping(request: pytest.FixtureRequest) -> bool:
    marker = request.node.get_closest_marker(MARKER)
    if marker is not None:
        enabled = marker.args[0] if marker.args else marker.kwargs.get("enabled", True)
        if not isinstance(enabled, bool):
            raise pytest.UsageError(f"@pytest.mark.{MARKER} takes True or False, not {enabled!r}")
        return enabled
    return bool(request.config.getini(INI_OPTION))


@pytest.fixture
def durabletask_backend(
    request: pytest.FixtureRequest, durabletask_backends: _Backends
) -> Iterator[InMemoryOrchestrationBackend]:
    """The session's backend (with or without time skipping, as the test is marked), emptied for this test."""
    backend = durabletask_backends.get(_time_skipping(request))
    backend.reset()
    yield backend


@pytest.fixture
def durabletask_client(durabletask_backend: InMemoryOrchestrationBackend) -> Iterator[TaskHubGrpcClient]:
    """A client of the test's backend."""
    from durabletask.client import TaskHubGrpcClient

    made = TaskHubGrpcClient(host_address=durabletask_backend.address)
    yield made
    made.close()


def _async_client_fixture() -> Any:
    try:
        import pytest_asyncio
    except ImportError:

        @pytest.fixture(name="durabletask_async_client")
        def without_pytest_asyncio() -> None:
            """An async client of the test's backend (needs pytest-asyncio)."""
            pytest.fail("durabletask_async_client needs pytest-asyncio (pip install pytest-asyncio)")

        return without_pytest_asyncio

    @pytest_asyncio.fixture(name="durabletask_async_client")
    async def async_client(
        durabletask_backend: InMemoryOrchestrationBackend,
    ) -> AsyncIterator[AsyncTaskHubGrpcClient]:
        """An async client of the test's backend, closed on the test's event loop."""
        from durabletask.client import AsyncTaskHubGrpcClient

        made = AsyncTaskHubGrpcClient(host_address=durabletask_backend.address)
        yield made
        await made.close()

    return async_client


durabletask_async_client = _async_client_fixture()


class WorkerFactory:
    """Makes workers connected to the test's backend; stops every one it made when the test ends."""

    def __init__(self, backend: InMemoryOrchestrationBackend) -> None:
        self._backend = backend
        self._made: list[TaskHubGrpcWorker] = []

    def __call__(
        self,
        *,
        orchestrators: Iterable[Callable[..., Any]] = (),
        activities: Iterable[Callable[..., Any]] = (),
        entities: Iterable[Any] = (),
        start: bool = True,
        **options: Any,
    ) -> TaskHubGrpcWorker:
        """A worker with these functions registered (by their own names), started unless ``start`` is False.

        ``options`` go to :class:`~durabletask.worker.TaskHubGrpcWorker` (not ``host_address``: it is the backend's).
        """
        from durabletask.worker import TaskHubGrpcWorker

        if "host_address" in options:
            raise TypeError("durabletask_worker connects to the test's backend; do not pass host_address")
        made = TaskHubGrpcWorker(host_address=self._backend.address, **options)
        self._made.append(made)
        for fn in orchestrators:
            made.add_orchestrator(fn)
        for fn in activities:
            made.add_activity(fn)
        for entity in entities:
            made.add_entity(entity)
        if start:
            made.start()
        return made

    def stop_all(self) -> None:
        """Stops every worker this factory made, the last made first; the fixture calls it when the test ends."""
        for made in reversed(self._made):
            made.stop()
        self._made.clear()


@pytest.fixture
def durabletask_worker(durabletask_backend: InMemoryOrchestrationBackend) -> Iterator[WorkerFactory]:
    """``durabletask_worker(orchestrators=[...], activities=[...])``: a started worker on the test's backend."""
    factory = WorkerFactory(durabletask_backend)
    yield factory
    factory.stop_all()
