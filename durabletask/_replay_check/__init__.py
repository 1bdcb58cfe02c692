"""Replay-safety checks: replaying recorded histories with the current orchestrator code, as a worker would."""
