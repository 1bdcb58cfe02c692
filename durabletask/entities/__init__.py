"""Durable entities: identities, entity code (functions or ``DurableEntity`` classes), locks and metadata."""

from durabletask.entities.durable_entity import DurableEntity
from durabletask.entities.entity_context import EntityContext
from durabletask.entities.entity_instance_id import EntityInstanceId
from durabletask.entities.entity_lock import EntityLock
from durabletask.entities.entity_metadata import EntityMetadata
from durabletask.entities.entity_operation_failed_exception import EntityOperationFailedException

PACKAGE_NAME = "durabletask.entities"

__all__ = [
    "DurableEntity",
    "EntityContext",
    "EntityInstanceId",
    "EntityLock",
    "EntityMetadata",
    "EntityOperationFailedException",
]
