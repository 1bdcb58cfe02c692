"""The pure replay core: orchestration executor, per-event handlers, runtime context and actions."""
