"""The replay-safety check: each execution of each history replayed with the current code, through the worker's
own orchestration runner (its version and code policies, its executor settings), then judged."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any

from durabletask._grpc.large_payloads import FetchedPayloads, payload_limit
from durabletask._proto import orchestrator_service_pb2 as pb
from durabletask._replay.executor import OrchestrationExecutor
from durabletask._replay.failures import NonDeterminismError, qualified_name
from durabletask._replay_check import explain
from durabletask._replay_check.callsites import CallSites
from durabletask._replay_check.histories import Execution, OrchestrationHistory, executions
from durabletask._replay_check.probe import Probe
from durabletask._replay_check.report import Divergence, DivergenceKind, ReplayReport, ReplayResult, Verdict
from durabletask._worker.filters import WorkItemFilters, filters_from_registry
from durabletask._worker.grpc_worker import TaskHubGrpcWorker
from durabletask._worker.options import VersioningOptions
from durabletask._worker.orchestration_runner import (
    Executor,
    ExecutorFactory,
    OrchestrationOutcome,
    OrchestrationRunner,
    default_executor_factory,
)
from durabletask._worker.registry import WorkerRegistry
from durabletask._worker.versioning import VERSION_MISMATCH_ERROR_TYPE

_NONDETERMINISM = qualified_name(NonDeterminismError)
# Failures the runner makes itself, from the worker's policies, before any orchestrator code runs.
_POLICY_ERRORS = frozenset({VERSION_MISMATCH_ERROR_TYPE, "durabletask.worker.CodeMismatchError"})
_FAILED = pb.ORCHESTRATION_STATUS_FAILED

Orchestrators = TaskHubGrpcWorker | Mapping[str, Callable[..., Any]] | Iterable[Callable[..., Any]]


class _Problem(Enum):
    FAILS = 1  # the replay failed the orchestration where the history records no such failure
    ENDS_DIFFERENTLY = 2  # the history ends the execution where the code does not


@dataclass(frozen=True)
class _Settings:
    registry: WorkerRegistry
    factory: ExecutorFactory
    fetched: FetchedPayloads | None
    properties: Any
    filters: WorkItemFilters | None  # what the worker asks the backend to send it (None: everything)


def _quiet_logger() -> logging.Logger:
    # The runner logs version mismatches and failures as a worker would; a check reports them instead.
    logger = logging.Logger("durabletask.replay_check")
    logger.disabled = True
    return logger


def _from_worker(worker: TaskHubGrpcWorker, logger: logging.Logger) -> _Settings:
    # The settings the worker's own run builds its executor factory from (grpc_worker._Run).
    store = worker._payload_store
    fetched = FetchedPayloads(store) if store is not None else None
    factory = default_executor_factory(
        worker._registry,
        logger,
        worker._maximum_timer_interval,
        worker._data_converter,
        worker._exception_properties_provider,
        payload_limit=payload_limit(store),
        payloads=fetched,
    )
    filters = worker._work_item_filters
    if worker._auto_generate_work_item_filters:
        filters = filters_from_registry(worker._registry)  # as start() generates them
    return _Settings(worker._registry, factory, fetched, worker._exception_properties_provider, filters)


def _from_functions(
    orchestrators: Mapping[str, Callable[..., Any]] | Iterable[Callable[..., Any]],
    versioning: VersioningOptions | None,
    logger: logging.Logger,
) -> _Settings:
    worker = TaskHubGrpcWorker()
    if isinstance(orchestrators, Mapping):
        for name, fn in orchestrators.items():
            worker.add_orchestrator(fn, name=name)
    else:
        for fn in orchestrators:
            worker.add_orchestrator(fn)
    if versioning is not None:
        worker.use_versioning(versioning)
    return _from_worker(worker, logger)


class ReplayChecker:
    """Replays recorded histories with the current orchestrator code and reports which would diverge.

    Each history is run through the same orchestration runner a started worker uses, with the worker's
    registrations, versioning policy, code-mismatch policy, maximum timer interval, data converter and payload
    store, so an instance the worker would hand on (another version) is reported as skipped, and one it would fail
    (an unregistered name among them) as diverging. An instance its work-item filters leave to other workers is
    skipped. Each continue-as-new execution in a history is checked on its own.

    Args:
        orchestrators: An unstarted :class:`~durabletask.worker.TaskHubGrpcWorker` with the application's
            registrations, or the orchestrator functions themselves (a list, or a mapping of name to function).
        versioning: With functions only: the versioning policy the worker would use.
    """

    def __init__(self, orchestrators: Orchestrators, *, versioning: VersioningOptions | None = None) -> None:
        self._logger = _quiet_logger()
        if isinstance(orchestrators, TaskHubGrpcWorker):
            if versioning is not None:
                raise ValueError("versioning: give it to the worker (worker.use_versioning) rather than here")
            self._settings = _from_worker(orchestrators, self._logger)
        else:
            self._settings = _from_functions(orchestrators, versioning, self._logger)
        self._runner = self._runner_for(self._settings.factory)

    def _runner_for(self, factory: ExecutorFactory) -> OrchestrationRunner:
        return OrchestrationRunner(
            self._settings.registry,
            factory,
            logger=self._logger,
            exception_properties_provider=self._settings.properties,
        )

    def check(self, histories: Iterable[OrchestrationHistory]) -> ReplayReport:
        """Check every execution of every history; the report keeps their order.

        Args:
            histories: The histories to replay, e.g. from :func:`histories_from_client` or :func:`histories_from_files`.
        """
        results: list[ReplayResult] = []
        for history in histories:
            results.extend(self.check_history(history))
        return ReplayReport(tuple(results))

    def check_history(self, history: OrchestrationHistory) -> list[ReplayResult]:
        """Check each execution of one instance's history.

        Args:
            history: One instance's history; it may hold several executions (continue-as-new).

        Returns:
            One result per execution; a single ``DIVERGES`` result when the history cannot be read and a single
            ``SKIPPED`` result when nothing is recorded yet.
        """
        try:
            runs = executions(history)
        except ValueError as error:  # an event no protocol kind describes
            bad = Divergence(DivergenceKind.HISTORY, f"the history cannot be replayed: {error}")
            return [
                ReplayResult(history.instance_id, "", None, Verdict.DIVERGES, source=history.source, divergence=bad)
            ]
        if not runs:
            # Between a continue-as-new and the new execution's first turn, or before a scheduled start.
            reason = "nothing is recorded yet (it has not started, or has just continued as new)"
            return [ReplayResult(history.instance_id, "", None, Verdict.SKIPPED, source=history.source, reason=reason)]
        return [self.check_execution(run) for run in runs]

    def check_execution(self, execution: Execution) -> ReplayResult:
        """Check one execution's protocol events.

        Args:
            execution: One execution of a history.
        """
        if not execution.started:
            unreadable = Divergence(DivergenceKind.HISTORY, "the history has no executionStarted event to replay from")
            return _result(execution, Verdict.DIVERGES, divergence=unreadable)
        if not _delivered(self._settings.filters, execution):
            reason = "this worker's work-item filters leave it to other workers"
            return _result(execution, Verdict.SKIPPED, reason=reason)
        request = _request(execution)
        outcome = self._run(self._runner, request)
        if outcome.response is None:
            return _result(execution, Verdict.SKIPPED, reason=f"this worker would hand it on: {outcome.reason}")
        actions = list(outcome.response.actions)
        refusal = _policy_failure(actions)
        if refusal is not None:
            return _result(execution, Verdict.DIVERGES, divergence=Divergence(DivergenceKind.VERSION, refusal))
        problem = _judge(execution, actions)
        if problem is None:
            return _result(execution, Verdict.REPLAYS)
        return _result(execution, Verdict.DIVERGES, divergence=self._explain(execution, request, problem))

    def _run(self, runner: OrchestrationRunner, request: pb.OrchestratorRequest) -> OrchestrationOutcome:
        fetched = self._settings.fetched
        if fetched is None:
            return runner.run(request, "")
        # As the worker does on a work item's arrival: its externalized payloads are fetched, then decoded.
        _, tokens = fetched.fetch(pb.WorkItem(orchestratorRequest=request))
        try:
            return runner.run(request, "")
        finally:
            fetched.forget(tokens)

    def _explain(self, execution: Execution, request: pb.OrchestratorRequest, problem: _Problem) -> Divergence:
        """Replay once more, closely watched, to say where and why the history and the code part."""
        probe = Probe()
        plain = self._settings.factory

        def probed() -> Executor:
            executor = plain()
            if isinstance(executor, OrchestrationExecutor):
                probe.install(executor.handlers)
            return executor

        with CallSites() as sites:
            outcome = self._run(self._runner_for(probed), request)
        actions = list(outcome.response.actions) if outcome.response is not None else []
        ending = execution.ending()
        if problem is _Problem.ENDS_DIFFERENTLY and ending is not None:
            return explain.from_ending(ending, actions, sites)
        return explain.from_failure(probe.failure, sites, _failure_of(actions))


def _delivered(filters: WorkItemFilters | None, execution: Execution) -> bool:
    """Whether the backend would send this worker the instance's work items (as it matches filters)."""
    if filters is None:
        return True
    version = execution.version or ""
    return any(f.name == execution.name and (not f.versions or version in f.versions) for f in filters.orchestrations)


def _request(execution: Execution) -> pb.OrchestratorRequest:
    # Everything is past: the executor replays it all, as for a work item whose new events are already recorded.
    request = pb.OrchestratorRequest(instanceId=execution.instance_id, pastEvents=execution.events)
    if execution.execution_id is not None:
        request.executionId.value = execution.execution_id
    return request


def _completion(actions: list[pb.OrchestratorAction]) -> pb.CompleteOrchestrationAction | None:
    for action in reversed(actions):
        if action.HasField("completeOrchestration"):
            return action.completeOrchestration
    return None


def _failure_of(actions: list[pb.OrchestratorAction]) -> pb.TaskFailureDetails:
    completion = _completion(actions)
    return completion.failureDetails if completion is not None else pb.TaskFailureDetails()


def _policy_failure(actions: list[pb.OrchestratorAction]) -> str | None:
    completion = _completion(actions)
    if completion is None or completion.orchestrationStatus != _FAILED:
        return None
    details = completion.failureDetails
    if details.errorType not in _POLICY_ERRORS:
        return None
    return f"the worker would fail this instance without running it: {details.errorMessage}"


def _judge(execution: Execution, actions: list[pb.OrchestratorAction]) -> _Problem | None:
    """``None`` when the replay agrees with the history; else how it does not."""
    completion = _completion(actions)
    ending = execution.ending()
    if completion is not None and completion.orchestrationStatus == _FAILED:
        if ending is None or ending.orchestrationStatus != _FAILED:
            return _Problem.FAILS
        # A failed execution runs again only if rewound, which replays its recorded calls: only a mismatch among
        # them matters, not how the current code goes on past the recorded failure.
        recorded = ending.failureDetails.errorType
        fails_anew = completion.failureDetails.errorType == _NONDETERMINISM and recorded != _NONDETERMINISM
        return _Problem.FAILS if fails_anew else None
    if ending is None or ending.orchestrationStatus == _FAILED:
        return None
    ends_alike = (
        completion is not None
        and completion.orchestrationStatus == ending.orchestrationStatus
        and all(a.HasField("completeOrchestration") for a in actions)
    )
    return None if ends_alike else _Problem.ENDS_DIFFERENTLY


def _result(execution: Execution, verdict: Verdict, **found: Any) -> ReplayResult:
    return ReplayResult(
        instance_id=execution.instance_id,
        name=execution.name,
        version=execution.version,
        verdict=verdict,
        execution=execution.index,
        execution_id=execution.execution_id,
        parent_instance_id=execution.parent_instance_id,
        source=execution.source,
        events=len(execution.events),
        **found,
    )
