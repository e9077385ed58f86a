"""Keeping rendered secrets out of everything the service stores, logs, returns or shows.

``{{ ENV.NAME }}`` values are rendered only into the requests sent to executors. Errors from those
requests (a URL with query parameters, an echoing server's answer), executor logs and callback
metadata could still carry them, so every text the service keeps passes through :meth:`mask` first.
Encoded forms are masked too (URL-quoted, JSON-escaped, base64 of ``user:password``), because that
is how secrets appear in URLs, bodies and ``Authorization`` headers.
"""

from __future__ import annotations

import base64
import json
import logging
import threading
from typing import Any
from urllib.parse import quote, quote_plus

MASK = "***"


class SecretMask:
    """The set of secret values seen so far; grows as checks are prepared, never shrinks."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._forms: list[str] = []

    def add(self, values: set[str] | list[str], *, basic_auth_user: str | None = None) -> None:
        forms: set[str] = set()
        for value in values:
            if not value:
                continue
            forms.update({value, quote(value, safe=""), quote_plus(value), json.dumps(value)[1:-1]})
            if basic_auth_user is not None:
                forms.add(base64.b64encode(f"{basic_auth_user}:{value}".encode()).decode())
        with self._lock:
            merged = set(self._forms) | {f for f in forms if f}
            # Longest first, so a secret containing another is masked whole.
            self._forms = sorted(merged, key=len, reverse=True)

    def mask(self, text: str | None) -> str | None:
        if not text:
            return text
        with self._lock:
            forms = self._forms
        for form in forms:
            if form in text:
                text = text.replace(form, MASK)
        return text

    def mask_obj(self, value: Any) -> Any:
        """``value`` (JSON-like) with every string masked, keys included."""
        if isinstance(value, str):
            return self.mask(value)
        if isinstance(value, dict):
            return {self.mask(str(k)): self.mask_obj(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.mask_obj(v) for v in value]
        return value


_log_masks: list[SecretMask] = []
_log_lock = threading.Lock()


def install_log_masking(mask: SecretMask) -> None:
    """Mask this service's secrets in every log record of the process, whichever library logs it
    (urllib3 logs request lines, query strings included, at DEBUG).

    Done at record creation, so every handler (files, journald, pytest's capture) sees only the
    masked text. The record's message is formatted once and its arguments dropped.
    """
    with _log_lock:
        if any(m is mask for m in _log_masks):
            return
        first = not _log_masks
        _log_masks.append(mask)
    if not first:
        return
    make = logging.getLogRecordFactory()

    def masked_record(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = make(*args, **kwargs)
        try:
            message = record.getMessage()
        except Exception:  # a bad format string: leave the record to logging's own error path
            return record
        for m in list(_log_masks):
            message = m.mask(message) or message
        record.msg, record.args = message, None
        return record

    logging.setLogRecordFactory(masked_record)
