"""Arms dtscale's install check at interpreter start; imported by the ``dtscale-install-check.pth`` of its wheel.

The .pth runs at every start of every interpreter of the environment, so this module only puts a finder at the
head of ``sys.meta_path``. The finder finds nothing: at the first ``import durabletask`` it leaves, lists this
folder once, and only if the listing looks wrong imports ``_dtscale_install_check`` to look closer and warn.
"""

import os
import sys

PACKAGE = "durabletask"
#: The site-packages folder that holds this module, and dtscale's ``durabletask`` beside it.
SITE_DIR = os.path.dirname(__file__)
METADATA_SUFFIXES = (".dist-info", ".egg-info")
#: Metadata folders of distributions named after the package: Microsoft's SDK and its providers. Installers write
#: these projects' names in lower case.
FOREIGN_PREFIXES = (f"{PACKAGE}-", f"{PACKAGE}_", f"{PACKAGE}.")


def suspect(site_dir: str) -> bool:
    """Whether ``site_dir`` holds a distribution named after the package, or lost the package's ``__init__``.

    One directory listing, filtered in C; ``_dtscale_install_check`` then decides whether it is a conflict."""
    try:
        names = os.listdir(site_dir)
    except OSError:
        return False
    if any(n.startswith(FOREIGN_PREFIXES) and n.endswith(METADATA_SUFFIXES) for n in names):
        return True
    return not os.path.isfile(os.path.join(site_dir, PACKAGE, "__init__.py"))


class _FirstImportFinder:
    """Runs the check when ``durabletask`` is first looked for, then leaves ``sys.meta_path``."""

    def find_spec(self, fullname: str, path: object = None, target: object = None) -> None:
        if fullname == PACKAGE and path is None:
            disarm()
            if suspect(SITE_DIR):
                from _dtscale_install_check import report

                # Frames: report -> find_spec -> the import system's (which warnings skips) -> the importing line.
                report(SITE_DIR, stacklevel=2)


_FINDER = _FirstImportFinder()


def install() -> None:
    """Arms the check for this process's first ``import durabletask``."""
    if PACKAGE not in sys.modules and _FINDER not in sys.meta_path:
        sys.meta_path.insert(0, _FINDER)


def disarm() -> None:
    """Takes the finder off ``sys.meta_path`` (the check runs once per process)."""
    while _FINDER in sys.meta_path:
        sys.meta_path.remove(_FINDER)
