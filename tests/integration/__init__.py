"""Tests over the wire on our own emulator, with the local components users have: Azurite, Chromium, OTLP."""
