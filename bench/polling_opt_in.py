"""The SDK's opt-in gRPC client thread polling, for the bench programs that measure our SDK with it on.

Our SDK's figures in bench/RESULTS.md from 2026-12-04 on were measured with it (it was then applied by
``import durabletask``; it is now ``durabletask.grpc_options.enable_thread_polling()``). Call :func:`opt_in` first,
before anything imports grpc. Under Microsoft's SDK (the peer venv), which has no such setting, it does nothing.
"""

from __future__ import annotations


def opt_in() -> str:
    """Turns the polling on where the SDK has it; returns what happened (a ``ThreadPolling`` name)."""
    try:
        from durabletask.grpc_options import enable_thread_polling  # type: ignore[attr-defined,unused-ignore]
    except ImportError:
        return "NOT_IN_THIS_SDK"
    return str(enable_thread_polling().name)
