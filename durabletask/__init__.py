"""Python SDK for the Durable Task Scheduler: durable orchestrations, activities and entities over gRPC."""

PACKAGE_NAME = "durabletask"
DISTRIBUTION_NAME = "dtscale"
__version__ = "0.1.0"
