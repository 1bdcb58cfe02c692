"""The worker's side of the payload store: work items restored on arrival, results externalized on the way out."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from durabletask._grpc.large_payloads import FetchedPayloads, PayloadBoundary, PayloadStub
from durabletask._proto import orchestrator_service_pb2 as pb
from durabletask._worker.threads import DaemonThreadPool
from durabletask.payload.helpers import PayloadStoreError

WorkItemCallback = Callable[[pb.WorkItem, Any, Callable[[], None]], None]

#: Work items whose payloads are being fetched at once; the stream waits for one to finish beyond this.
DEFAULT_RESTORES = 4


class PayloadWorkItems:
    """Wraps the work-item handler: the handler and the runners see payloads, never tokens.

    A work item holding tokens is restored on a thread of its own, not on the stream's: a slow store delays
    that item only, while the stream goes on receiving (and the handler dispatching) the others. At most
    ``max_restores`` items are restored at once; beyond that the stream waits, as it waits for a free slot.
    The restored payloads go into a copy of the item, so the stream's reference to the message it received
    does not keep them alive after the item is done. For the request kinds in ``fetched_kinds`` they do not go
    into the message at all: ``fetched`` holds them, and the runner takes each as it decodes it.

    A work item whose payload cannot be fetched does not run with a missing value. When retrying cannot help
    (the blob is gone, the token is malformed or of another store) an orchestration or activity fails with
    the error naming the instance and field; otherwise (the store is unreachable) the item is handed back.
    """

    def __init__(
        self,
        handler: WorkItemCallback,
        boundary: PayloadBoundary,
        logger: logging.Logger,
        *,
        max_restores: int = DEFAULT_RESTORES,
        fetched: FetchedPayloads | None = None,
        fetched_kinds: frozenset[str] = frozenset(),
    ) -> None:
        self._handler = handler
        self._fetched = fetched
        self._fetched_kinds = fetched_kinds if fetched is not None else frozenset()
        self._boundary = boundary
        self._logger = logger
        self._free = threading.BoundedSemaphore(max_restores)
        self._pool = DaemonThreadPool(max_restores, "durabletask-payloads")

    def __call__(self, item: pb.WorkItem, stub: Any, done: Callable[[], None]) -> None:
        """Hand ``item`` on, restoring its payloads first on a pool thread when it holds tokens.

        ``done`` is called here when the item is not handed on.
        """
        try:
            needs_store = self._boundary.holds_tokens(item)
        except Exception:
            self._logger.exception("could not read the payloads of a work item")
            done()
            return
        if not needs_store:
            self._handler(item, PayloadStub(stub, self._boundary, self._boundary.instance_of(item)), done)
            return
        if item.WhichOneof("request") not in self._fetched_kinds:
            copy = pb.WorkItem()
            copy.CopyFrom(item)
            item = copy
        self._free.acquire()
        try:
            self._pool.submit(self._restore, item, stub, done)
        except BaseException:
            self._free.release()
            done()
            raise

    def close(self) -> None:
        """Wait for the restores under way (each then hands its item on or back) and stop the threads."""
        self._pool.shutdown(wait=True)

    def _restore(self, item: pb.WorkItem, stub: Any, done: Callable[[], None]) -> None:
        try:
            self._restore_and_hand_on(item, stub, done)
        finally:
            self._free.release()

    def _restore_and_hand_on(self, item: pb.WorkItem, stub: Any, done: Callable[[], None]) -> None:
        try:
            instance_id, done = self._fetch_or_restore(item, done)
        except PayloadStoreError as error:
            self._logger.error("%s", error)
            try:
                self._refuse(item, PayloadStub(stub, self._boundary), error)
            except Exception:
                self._logger.exception("could not report the payload error for a work item")
            finally:
                done()
            return
        except Exception:
            # As for any work item that cannot be dispatched: its lease expires and it is redelivered.
            self._logger.exception("could not restore the payloads of a work item")
            done()
            return
        try:
            self._handler(item, PayloadStub(stub, self._boundary, instance_id), done)
        except Exception:  # the handler releases the item itself; a raise here would only kill the thread
            self._logger.exception("could not dispatch a work item")

    def _fetch_or_restore(self, item: pb.WorkItem, done: Callable[[], None]) -> tuple[str | None, Callable[[], None]]:
        """Restore the item's payloads (into it, or into ``fetched``); returns its instance and its ``done``."""
        fetched = self._fetched
        if fetched is None or item.WhichOneof("request") not in self._fetched_kinds:
            return self._boundary.work_item(item), done
        instance_id, tokens = fetched.fetch(item)

        def release() -> None:
            fetched.forget(tokens)
            done()

        return instance_id, release if tokens else done

    def _refuse(self, item: pb.WorkItem, stub: Any, error: PayloadStoreError) -> None:
        kind = item.WhichOneof("request")
        token = item.completionToken
        failure = pb.TaskFailureDetails(errorType=type(error).__name__, errorMessage=str(error), isNonRetriable=True)
        if kind == "orchestratorRequest":
            if not error.permanent:
                stub.AbandonTaskOrchestratorWorkItem(pb.AbandonOrchestrationTaskRequest(completionToken=token))
                return
            complete = pb.CompleteOrchestrationAction(
                orchestrationStatus=pb.ORCHESTRATION_STATUS_FAILED, failureDetails=failure
            )
            stub.CompleteOrchestratorTask(
                pb.OrchestratorResponse(
                    instanceId=item.orchestratorRequest.instanceId,
                    completionToken=token,
                    actions=[pb.OrchestratorAction(id=-1, completeOrchestration=complete)],
                )
            )
        elif kind == "activityRequest":
            if not error.permanent:
                stub.AbandonTaskActivityWorkItem(pb.AbandonActivityTaskRequest(completionToken=token))
                return
            request = item.activityRequest
            stub.CompleteActivityTask(
                pb.ActivityResponse(
                    instanceId=request.orchestrationInstance.instanceId,
                    taskId=request.taskId,
                    failureDetails=failure,
                    completionToken=token,
                )
            )
        else:
            stub.AbandonTaskEntityWorkItem(pb.AbandonEntityTaskRequest(completionToken=token))
