"""Entity instance IDs: the ``@name@key`` identity of a durable entity."""

from __future__ import annotations

__all__ = ["EntityInstanceId"]


class EntityInstanceId:
    """Identifies one durable entity: an entity name (case-insensitive, stored lower-case) and a key.

    The wire form is ``@name@key``. Names cannot contain ``@``; keys are taken verbatim.

    Args:
        entity: The entity name, e.g. ``"counter"``.
        key: The instance key, e.g. ``"user-42"``.

    Raises:
        ValueError: The name or key is empty, not a string, or the name contains ``@``.
    """

    __slots__ = ("entity", "key")

    def __init__(self, entity: str, key: str) -> None:
        EntityInstanceId.validate_entity_name(entity)
        EntityInstanceId.validate_key(key)
        self.entity = entity.lower()
        self.key = key

    def __str__(self) -> str:
        return f"@{self.entity}@{self.key}"

    def __repr__(self) -> str:
        return f"EntityInstanceId(entity={self.entity!r}, key={self.key!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, EntityInstanceId):
            return False
        return (self.entity, self.key) == (other.entity, other.key)

    def __hash__(self) -> int:
        return hash((self.entity, self.key))

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, EntityInstanceId):
            return NotImplemented
        return str(self) < str(other)

    @staticmethod
    def parse(entity_id: str) -> EntityInstanceId:
        """Parse the ``@name@key`` form.

        Args:
            entity_id: The string to parse, e.g. ``"@counter@c1"`` (the name is lower-cased as stored).

        Raises:
            ValueError: ``entity_id`` does not have that form.
        """
        if not isinstance(entity_id, str) or not entity_id.startswith("@"):
            raise ValueError(f"entity ID {entity_id!r} must have the form '@name@key' (it must start with '@')")
        name, sep, key = entity_id[1:].partition("@")
        if not sep:
            raise ValueError(f"entity ID {entity_id!r} must have the form '@name@key' (no '@' before the key)")
        return EntityInstanceId(name, key)

    @staticmethod
    def validate_entity_name(name: str) -> None:
        """Raise ``ValueError`` unless ``name`` is a non-empty string without ``@``.

        Args:
            name: The entity name to check.

        Raises:
            ValueError: ``name`` is not a string, is empty or contains ``@``.
        """
        if not isinstance(name, str):
            raise ValueError(f"entity name must be a string, not {type(name).__name__}")
        if not name:
            raise ValueError("entity name cannot be empty")
        if "@" in name:
            raise ValueError(f"entity name {name!r} cannot contain '@'")

    @staticmethod
    def validate_key(key: str) -> None:
        """Raise ``ValueError`` unless ``key`` is a non-empty string.

        Args:
            key: The entity key to check.

        Raises:
            ValueError: ``key`` is not a string or is empty.
        """
        if not isinstance(key, str):
            raise ValueError(f"entity key must be a string, not {type(key).__name__}")
        if not key:
            raise ValueError("entity key cannot be empty")
