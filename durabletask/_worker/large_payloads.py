"""The worker's side of the payload store: work items restored on arrival, results externalized on the way out."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from durabletask._grpc.large_payloads import PayloadBoundary, PayloadStub
from durabletask._proto import orchestrator_service_pb2 as pb
from durabletask.payload.helpers import PayloadStoreError

WorkItemCallback = Callable[[pb.WorkItem, Any, Callable[[], None]], None]


class PayloadWorkItems:
    """Wraps the work-item handler: the handler and the runners see payloads, never tokens.

    A work item whose payload cannot be fetched does not run with a missing value. When retrying cannot help
    (the blob is gone, the token is malformed or of another store) an orchestration or activity fails with
    the error naming the instance and field; otherwise (the store is unreachable) the item is handed back.
    """

    def __init__(self, handler: WorkItemCallback, boundary: PayloadBoundary, logger: logging.Logger) -> None:
        self._handler = handler
        self._boundary = boundary
        self._logger = logger

    def __call__(self, item: pb.WorkItem, stub: Any, done: Callable[[], None]) -> None:
        """Restore ``item``'s payloads, then hand it on; ``done`` is called here when it is not handed on."""
        try:
            instance_id = self._boundary.work_item(item)
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
        self._handler(item, PayloadStub(stub, self._boundary, instance_id), done)

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
