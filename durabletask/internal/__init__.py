"""Compatibility paths: applications written for the compatible API import protobuf types from here."""
