"""The one build step of dtscale's wheel that pyproject.toml cannot declare: a .pth file in site-packages.

The .pth arms ``_dtscale_install_hook`` at interpreter start, so a ``durabletask`` package overwritten by
another distribution is reported even where the overwritten modules are no longer ours. Everything else about
the build is in pyproject.toml.
"""

from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

PTH_NAME = "dtscale-install-check.pth"
# site runs .pth lines that start with "import"; this one only puts a finder on sys.meta_path.
PTH_LINE = "import _dtscale_install_hook; _dtscale_install_hook.install()\n"


class BuildPyWithPth(build_py):
    """build_py, plus the .pth at the top of the build tree, which the wheel installs into site-packages."""

    def run(self) -> None:
        super().run()
        if not self.editable_mode:  # an editable install runs the checkout's code: nothing to guard there
            Path(self.build_lib, PTH_NAME).write_text(PTH_LINE, encoding="utf-8")

    def get_outputs(self, include_bytecode: bool = True) -> list[str]:
        outputs = list(super().get_outputs(include_bytecode))
        return outputs if self.editable_mode else [*outputs, str(Path(self.build_lib, PTH_NAME))]


setup(cmdclass={"build_py": BuildPyWithPth})
