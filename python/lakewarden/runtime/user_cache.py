"""The user's cache directory for lakewarden: what a run may keep to make later runs cheaper
and can always rebuild (dbt compilations of a read-only install, the JVM's class archive)."""

from __future__ import annotations

import os
from pathlib import Path


def user_cache_dir() -> Path:
    """``$LAKEWARDEN_CACHE_DIR``, else ``$XDG_CACHE_HOME/lakewarden``, else ``~/.cache/lakewarden``."""
    explicit = os.environ.get("LAKEWARDEN_CACHE_DIR")
    if explicit:
        return Path(explicit).expanduser()
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "lakewarden"
