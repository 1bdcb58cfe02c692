"""Unit tests for the gRPC plumbing."""
