"""Fixtures of the install tests; they live in support.py beside the helpers other install tests share."""

from tests.system.install.support import preparations, pypi, wheels

__all__ = ["preparations", "pypi", "wheels"]
