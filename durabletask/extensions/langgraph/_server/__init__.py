"""LangGraph's server API, served over HTTP on DTS: ``durabletask langgraph dev``, ``serve`` and ``worker``.

The HTTP server is stateless. Threads, runs, assistants, the store and crons live in the task hub (orchestrations,
entities, durable streams and scheduled tasks), so any number of servers and workers can share one hub.
"""
