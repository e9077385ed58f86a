"""A job's or extract's lakeFS source: which repository, where its decoded ranges are cached.

Where the server is and how to authenticate is :mod:`lakewarden.lakefs.client`'s one rule
(lakectl's places).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from lakewarden.errors import BadInput

__all__ = ["LakeFSSource"]


@dataclass(frozen=True)
class LakeFSSource:
    """Read the repository from a lakeFS server (an extract into ``STATE/snapshots/REPO``)
    instead of a snapshot directory. The server's credentials: :mod:`lakewarden.lakefs.client`'s
    rule (``LAKECTL_CREDENTIALS_*`` or ``~/.lakectl.yaml``), as ``lakewarden extract`` reads them."""

    repo: str
    #: the server's URL (default: ``LAKECTL_SERVER_ENDPOINT_URL`` or ``~/.lakectl.yaml``)
    endpoint: str | None = None
    #: decoded-range cache (default: ``STATE/range-cache``)
    cache_dir: Path | None = None
    #: processes decoding ranges in parallel
    jobs: int = 1

    def __post_init__(self) -> None:
        if not self.repo:
            raise BadInput("a lakeFS source needs a repository name", field="--repo")
        if self.jobs < 1:
            raise BadInput(f"{self.jobs} is not a number of processes (1 or more)", field="--jobs")
