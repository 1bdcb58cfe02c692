"""Every public class, function and method of the SDK and of the emulator's public surface has a docstring."""

from __future__ import annotations

from tests.system.docs.public_api import undocumented


def test_every_public_name_has_a_docstring() -> None:
    missing = undocumented()
    assert not missing, f"{len(missing)} public names have no docstring:\n" + "\n".join(missing)
