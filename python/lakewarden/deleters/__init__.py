"""Storage backends that delete objects for the sweep (local filesystem, S3; Azure/GCS later)."""

from lakewarden.deleters.base import (
    DELETED,
    FAILED,
    DeleteOutcome,
    Deleter,
    DeleterFactory,
    deleter_for,
    register_backend,
)

__all__ = ["DELETED", "FAILED", "DeleteOutcome", "Deleter", "DeleterFactory", "deleter_for", "register_backend"]
