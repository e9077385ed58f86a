"""Errors of the checks service, each carrying the HTTP status the API answers with.

Bad configuration or bad request bodies are :class:`lakewarden.errors.BadInput` (HTTP 400, CLI
exit 2); the classes here cover the other refusals the API must tell apart.
"""

from __future__ import annotations

from typing import Any

from lakewarden.errors import LakewardenError


class ChecksError(LakewardenError):
    """A refusal of the checks service; ``http_status`` and ``details`` go into the JSON answer."""

    http_status = 500

    def __init__(self, message: str, **details: Any):
        super().__init__(message)
        self.details = details


class NotFound(ChecksError):
    http_status = 404


class Conflict(ChecksError):
    """The request is valid but the check is not in a state that allows it (e.g. retry SUCCESS)."""

    http_status = 409


class Unauthorized(ChecksError):
    http_status = 401


class TokenRejected(ChecksError):
    """A callback token that is forged, superseded by a retry, or already used."""

    http_status = 403


class CatalogError(ChecksError):
    """The repository catalog (lakeFS or snapshot) could not answer."""

    http_status = 502
