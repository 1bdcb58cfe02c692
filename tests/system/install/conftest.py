"""Fixtures of the install tests; they live in support.py beside the helpers other install tests share."""

from tests.system.install.support import pypi, wheels

__all__ = ["pypi", "wheels"]
