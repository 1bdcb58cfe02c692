"""A persistent, pip-installable emulator of the Durable Task Scheduler (TaskHubSidecarService over gRPC)."""
