"""Durable entities: identities and metadata."""

from durabletask.entities.entity_instance_id import EntityInstanceId
from durabletask.entities.entity_metadata import EntityMetadata

__all__ = ["EntityInstanceId", "EntityMetadata"]
