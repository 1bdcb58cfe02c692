"""Arms dtscale's install check at interpreter start; imported by the ``dtscale-install-check.pth`` of its wheel.

The .pth runs at every start of every interpreter of the environment, so this module only puts a finder at the
head of ``sys.meta_path``. The finder finds nothing: at the first ``import durabletask`` it leaves and imports
``_dtscale_install_check``, which looks at the package once and warns if another distribution wrote into it.
"""

import sys


class _FirstImportFinder:
    """Runs the check when ``durabletask`` is first looked for, then leaves ``sys.meta_path``."""

    def find_spec(self, fullname: str, path: object = None, target: object = None) -> None:
        if fullname == "durabletask" and path is None:
            disarm()
            from _dtscale_install_check import report

            # Frames: report -> find_spec -> the import system's (which warnings skips) -> the importing line.
            report(stacklevel=2)


_FINDER = _FirstImportFinder()


def install() -> None:
    """Arms the check for this process's first ``import durabletask``."""
    if "durabletask" not in sys.modules and _FINDER not in sys.meta_path:
        sys.meta_path.insert(0, _FINDER)


def disarm() -> None:
    """Takes the finder off ``sys.meta_path`` (the check runs once per process)."""
    while _FINDER in sys.meta_path:
        sys.meta_path.remove(_FINDER)
