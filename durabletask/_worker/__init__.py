"""Worker internals: registry, work-item stream loop, dispatch and the per-kind runners."""
