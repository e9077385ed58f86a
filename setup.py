"""Build hook: put the dbt project into the wheel as package data.

The repository keeps dbt's top-level layout (dbt_project.yml, models/, macros/, seeds/, tests/,
profiles/ at the root, where ``dbt build`` from the checkout expects them). A built wheel must
carry them too, so ``build_py`` copies them into ``lakewarden/dbt_project/`` of the build tree;
``lakewarden.runtime.project.project_dir`` finds them there with importlib.resources. An editable
install (scripts/setup.sh) copies nothing: the package then finds the checkout above it.
Everything else is declared in pyproject.toml.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
PROJECT_FILES = ("dbt_project.yml",)
PROJECT_DIRS = ("models", "macros", "seeds", "tests", "profiles")
IGNORED = shutil.ignore_patterns(".user.yml", "__pycache__", "*.pyc", "target", "logs", "dbt_packages")


class BuildPyWithDbtProject(build_py):
    """``build_py`` that also copies the dbt project into ``lakewarden/dbt_project``."""

    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return
        target = Path(self.build_lib) / "lakewarden" / "dbt_project"
        if target.exists():
            shutil.rmtree(target)
        target.mkdir(parents=True)
        for name in PROJECT_FILES:
            shutil.copy2(ROOT / name, target / name)
        for name in PROJECT_DIRS:
            shutil.copytree(ROOT / name, target / name, ignore=IGNORED)


setup(cmdclass={"build_py": BuildPyWithDbtProject})
