"""Storage backends that delete objects for the sweep: local filesystem, lakeFS's local blockstore,
S3 (DeleteObjects), Azure Blob Storage (Blob Batch) and Google Cloud Storage (batch requests)."""

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
