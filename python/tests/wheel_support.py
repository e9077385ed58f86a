"""Build lakewarden's wheel once per test run and install it into fresh venvs, as a user would.

``python -m build`` builds the sdist and then the wheel from the sdist, so the test also proves
the sdist carries the dbt project. Installs use uv's cache (pyspark and friends are not
downloaded twice) and constraints.txt, the project's lock file.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
_BUILT: dict[str, Path] = {}


def clean_env(**extra: str) -> dict[str, str]:
    """The environment of a user outside the checkout: no PYTHONPATH into the source tree."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "LAKEWARDEN_PROJECT_DIR", "LAKEWARDEN_HOME", "VIRTUAL_ENV")}
    env.update(extra)
    return env


def build_wheel(out_dir: Path) -> Path:
    """``python -m build`` of the checkout into ``out_dir`` (once per process); the wheel's path."""
    if "wheel" not in _BUILT:
        out_dir.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [sys.executable, "-m", "build", "--outdir", str(out_dir), str(REPO_ROOT)],
            check=True, capture_output=True, text=True, env=clean_env(), timeout=900,
        )
        (wheel,) = out_dir.glob("lakewarden-*.whl")
        _BUILT["wheel"] = wheel
    return _BUILT["wheel"]


def installed_wheel(base: Path) -> Path:
    """The wheel built and installed into one fresh venv under ``base``, once per test run (the
    demo test and the cluster test share it: an install takes minutes); the venv's bin dir."""
    if "venv" not in _BUILT:
        _BUILT["venv"] = install_into_fresh_venv(build_wheel(base / "dist"), base / "venv")
    return _BUILT["venv"]


def install_into_fresh_venv(wheel: Path, venv: Path) -> Path:
    """A fresh venv and the wheel installed into it with the lock file (the user's ``pip
    install``, done by scripts/venv-install.sh: uv, from its cache when it holds every pin: 0.7 s
    against pip's 26 s on 2 cores); the venv's bin dir. Not byte-compiled up front: what the
    tests run is compiled when first imported."""
    uv = Path(sys.executable).parent / "uv"  # this venv's, pinned in constraints.txt (scripts/setup.sh)
    subprocess.run(
        ["bash", str(REPO_ROOT / "scripts" / "venv-install.sh"), str(venv / "bin" / "python"),
         "--constraint", str(REPO_ROOT / "constraints.txt"), str(wheel)],
        check=True, capture_output=True, text=True, env={**clean_env(), "UV": str(uv), "PYTHON": "python3.11"}, timeout=1800,
    )
    return venv / "bin"
