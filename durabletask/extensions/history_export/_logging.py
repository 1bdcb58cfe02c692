"""The one logger every history-export module writes to, so that its output is configured in one place."""

from __future__ import annotations

import logging

logger = logging.getLogger("durabletask.extensions.history_export")

__all__ = ["logger"]
