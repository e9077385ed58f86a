"""lakewarden: data-retention and merge-gating toolkit for lakeFS repositories."""

__version__ = "0.1.0"
