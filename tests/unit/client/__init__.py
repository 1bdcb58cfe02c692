"""Unit tests for the client layer."""
