"""Optional integrations of the SDK with other services, each behind its own install extra."""
