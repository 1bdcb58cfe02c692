"""Every public class, function and method of the SDK and of the emulator's public surface has a docstring,
and every parameter of a public function or method is documented by name in its ``Args:`` section."""

from __future__ import annotations

from tests.system.docs.public_api import documented_params, public_modules, undocumented, undocumented_params

# Modules whose public functions and methods still lack ``Args:`` entries for some parameters. Every other module
# is held to the rule; remove a module from this set once its parameters are documented (the last test fails
# while a listed module no longer needs to be here).
REMAINING: frozenset[str] = frozenset()


def test_every_public_name_has_a_docstring() -> None:
    missing = undocumented()
    assert not missing, f"{len(missing)} public names have no docstring:\n" + "\n".join(missing)


def _module_of(where: str, modules: set[str]) -> str:
    return max((m for m in modules if where.startswith(m + ".")), key=len, default="")


def test_every_parameter_of_a_public_function_is_documented() -> None:
    gaps = undocumented_params()
    modules = set(public_modules()) | REMAINING
    enforced = {w: p for w, p in gaps.items() if _module_of(w, modules) not in REMAINING}
    assert not enforced, f"{len(enforced)} public functions leave parameters out of their Args: section:\n" + "\n".join(
        f"{where}: {', '.join(params)}" for where, params in enforced.items()
    )


def test_the_remaining_list_only_names_modules_with_gaps() -> None:
    with_gaps = undocumented_params(only=set(REMAINING))
    done = sorted(m for m in REMAINING if not any(w.startswith(m + ".") for w in with_gaps))
    assert not done, "these modules document every parameter now; remove them from REMAINING: " + ", ".join(done)


def test_the_args_parser_reads_google_style_entries() -> None:
    doc = """Do a thing.

    Args:
        first: The first; a long description
            that wraps onto a second line.
        second (int): With a type.
        *rest: Variadic.

    Raises:
        ValueError: Never documents a parameter.
    """
    assert documented_params(doc) == {"first", "second", "rest"}
