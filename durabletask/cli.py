"""The ``durabletask`` console script: operator commands to inspect, terminate, rewind, restart and purge."""

from durabletask._cli.launch import main

__all__ = ["main"]

if __name__ == "__main__":
    raise SystemExit(main())
