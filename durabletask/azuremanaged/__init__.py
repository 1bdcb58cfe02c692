"""Connect clients and workers to the managed Durable Task Scheduler (or its emulator).

The public classes live in :mod:`durabletask.azuremanaged.client` (``DurableTaskSchedulerClient``,
``AsyncDurableTaskSchedulerClient``), :mod:`durabletask.azuremanaged.worker`
(``DurableTaskSchedulerWorker``) and :mod:`durabletask.azuremanaged.connection_string`.
"""
