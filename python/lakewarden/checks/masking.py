"""Keeping secrets out of everything the service stores, logs, returns or shows.

Masking is a property of storage and output, not of the request that rendered a secret: the mask
is filled when the service starts (every variable with the ``env_prefix``, every value the
service config renders, the API token), and every text passes it before it is stored, cut,
logged or answered.

A secret is matched in every spelling it can take on its way through HTTP libraries, JSON and
logs, character by character: raw, percent-encoded fully or partly (``requests`` keeps ``!`` and
``/``; ``quote`` keeps ``/``; case of the hex digits free; double-encoded ``%25XX`` too),
form-encoded (space as ``+``), JSON- and Python-escaped (``\\u00XX``, ``\\"``, ``\\/``,
``\\xXX``), and base64 (the ``Authorization: Basic`` form, whatever the user name before it: the
whole base64 run around the secret is masked). Each spelling is a per-character alternative, so
mixtures (half encoded, half raw) match too.

Texts that arrive in pieces (an executor's log uploaded in appends) keep back their end when it
could be the beginning of a secret (:meth:`SecretMask.partial_start`), so no piece ever stores a
part of a secret that the next piece would complete.
"""

from __future__ import annotations

import base64
import logging
import re
import threading
import traceback
from typing import Any, Callable, Iterable

MASK = "***"
#: Values shorter than this are not masked: masking every "1" or "ab" would garble every answer,
#: and a value that short is not a secret anyway.
MIN_SECRET_CHARS = 4
#: A base64 core shorter than this is not searched for (it would match ordinary words).
_MIN_B64_CORE = 8

_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
_B64_RUN = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/-_=")
_JSON_SHORT = {'"': '\\"', "\\": "\\\\", "/": "\\/", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _hex_class(byte: int) -> str:
    """Regex for a byte as two hex digits, either case."""
    out = []
    for digit in f"{byte:02X}":
        out.append(f"[{digit}{digit.lower()}]" if digit.isalpha() else digit)
    return "".join(out)


def _unit_alternatives(ch: str) -> list[str]:
    """Regex alternatives (and their literal prefixes' regexes) for one character of a secret."""
    alts = [re.escape(ch)]
    encoded = ch.encode("utf-8")
    alts.append("".join(f"%(?:25)?{_hex_class(b)}" for b in encoded))  # %XX, double-encoded %25XX
    if ch == " ":
        alts.append(r"\+")
    if ch in _JSON_SHORT:
        alts.append(re.escape(_JSON_SHORT[ch]))
    if ch == "'":
        alts.append(re.escape("\\'"))
    code = ord(ch)
    if code < 0x10000:
        alts.append(r"\\u" + "".join(f"[{d}{d.lower()}]" if d.isalpha() else d for d in f"{code:04X}"))
    else:  # JSON's surrogate pair
        high, low = 0xD800 + ((code - 0x10000) >> 10), 0xDC00 + ((code - 0x10000) & 0x3FF)
        alts.append("".join(r"\\u" + "".join(f"[{d}{d.lower()}]" if d.isalpha() else d for d in f"{h:04X}")
                            for h in (high, low)))
    if code < 0x100:
        alts.append(r"\\x" + _hex_class(code))
    alts.append(r"\\U" + "".join(f"[{d}{d.lower()}]" if d.isalpha() else d for d in f"{code:08X}"))  # Python
    return alts


def _literal_prefixes(ch: str) -> list[str]:
    """Every spelling of one character as plain text, lower-cased, for prefix matching."""
    spellings = {ch.translate(_ASCII_LOWER), "".join(f"%{b:02x}" for b in ch.encode("utf-8")),
                 "".join(f"%25{b:02x}" for b in ch.encode("utf-8"))}
    if ch == " ":
        spellings.add("+")
    if ch in _JSON_SHORT:
        spellings.add(_JSON_SHORT[ch])
    if ch == "'":
        spellings.add("\\'")
    code = ord(ch)
    if code < 0x10000:
        spellings.add(f"\\u{code:04x}")
    else:
        high, low = 0xD800 + ((code - 0x10000) >> 10), 0xDC00 + ((code - 0x10000) & 0x3FF)
        spellings.add(f"\\u{high:04x}\\u{low:04x}")
    if code < 0x100:
        spellings.add(f"\\x{code:02x}")
    spellings.add(f"\\U{code:08x}")
    return sorted(spellings, key=len, reverse=True)


class _Secret:
    def __init__(self, value: str):
        self.value = value
        self.pattern = "".join("(?:" + "|".join(_unit_alternatives(c)) + ")" for c in value)
        self.spellings = [_literal_prefixes(c) for c in value]
        #: Characters a spelling of this secret can begin with (in either case).
        self.starts = frozenset(ch for sp in self.spellings[0] for ch in (sp[0], sp[0].upper(), sp[0].lower()))
        # Longest spelling of one character (4-byte UTF-8, each byte double-encoded: 20 chars).
        self.max_len = sum(max(len(s) for s in unit) + 2 * len(c.encode()) for unit, c in zip(self.spellings, value))

    def b64_cores(self) -> list[str]:
        """The parts of base64 that depend on the secret alone, for each alignment after a prefix
        (``user:``); the characters at either end also carry bits of the neighbours."""
        raw = self.value.encode("utf-8")
        cores = []
        for pad in range(3):
            encoded = base64.b64encode(b"\0" * pad + raw).decode()
            first = 1 if pad else 0
            last = (pad + len(raw)) // 3  # groups fully inside the secret end before this one
            core = encoded[4 * first : 4 * last]
            if len(core) >= _MIN_B64_CORE:
                cores.append(core)
                cores.append(core.translate(str.maketrans("+/", "-_")))  # URL-safe alphabet
        return cores

    def prefix_matches(self, lowered: str, pos: int) -> bool:
        """Whether ``lowered[pos:]`` (to its end; ASCII lower-cased) is a proper beginning of some
        spelling of this secret (every spelling of each character tried: a depth-first search
        without repeats)."""
        end = len(lowered)
        stack = [(0, pos)]
        seen = set()
        while stack:
            unit, at = stack.pop()
            if at >= end:
                if unit < len(self.spellings):
                    return True
                continue
            if unit >= len(self.spellings) or (unit, at) in seen:
                continue
            seen.add((unit, at))
            rest = lowered[at:]
            for spelling in self.spellings[unit]:
                if rest.startswith(spelling):
                    stack.append((unit + 1, at + len(spelling)))
                elif spelling.startswith(rest):
                    return True  # the text ends inside this spelling
        return False


class SecretMask:
    """The secret values of the service; grows (values rendered later are added), never shrinks."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._secrets: dict[str, _Secret] = {}
        self._regex: re.Pattern[str] | None = None
        self._cores: list[str] = []
        self._basic: set[str] = set()
        self._max_len = 0

    def add(self, values: Iterable[str], *, basic_auth_user: str | None = None) -> None:
        """Add secrets. Base64 of a secret of 8 or more bytes is found whatever precedes it;
        ``basic_auth_user`` adds the exact ``Authorization: Basic`` form of shorter ones too."""
        values = [v for v in values if isinstance(v, str) and len(v) >= MIN_SECRET_CHARS]
        basic = set()
        if basic_auth_user is not None:
            for v in values:
                raw = f"{basic_auth_user}:{v}".encode()
                basic.update({base64.b64encode(raw).decode(), base64.urlsafe_b64encode(raw).decode()})
        new = [v for v in values if v not in self._secrets]
        if not new and basic <= self._basic:
            return
        with self._lock:
            for value in new:
                self._secrets.setdefault(value, _Secret(value))
            self._basic |= basic
            ordered = sorted(self._secrets.values(), key=lambda s: len(s.value), reverse=True)
            self._regex = re.compile("|".join(s.pattern for s in ordered))
            cores = {c for s in ordered for c in s.b64_cores()} | {b.rstrip("=") for b in self._basic}
            self._cores = sorted(cores, key=len, reverse=True)
            self._max_len = max(s.max_len for s in ordered)

    def __len__(self) -> int:
        return len(self._secrets)

    @property
    def longest_spelling(self) -> int:
        """An upper bound of the length of any spelling of any secret (0 without secrets)."""
        return self._max_len

    def mask(self, text: str | None) -> str | None:
        if not text:
            return text
        regex, cores = self._regex, self._cores
        if regex is None:
            return text
        for _ in range(4):  # a secret containing '*' could be formed again around a mask
            masked = regex.sub(MASK, text)
            if masked == text:
                break
            text = masked
        for core in cores:
            start = text.find(core)
            while start >= 0:
                # The whole base64 run: its ends carry bits of the secret too.
                begin, end = start, start + len(core)
                while begin > 0 and text[begin - 1] in _B64_RUN:
                    begin -= 1
                while end < len(text) and text[end] in _B64_RUN:
                    end += 1
                text = text[:begin] + MASK + text[end:]
                start = text.find(core, begin + len(MASK))
        return text

    def partial_start(self, text: str) -> int:
        """Where a possible beginning of a secret (not the whole of one) starts at the end of
        ``text``, or ``len(text)``: the part a text arriving in pieces must keep back."""
        with self._lock:
            secrets = list(self._secrets.values())
        if not secrets or not text:
            return len(text)
        base = max(0, len(text) - self._max_len)
        tail = text[base:]
        lowered = tail.translate(_ASCII_LOWER)  # ASCII only: the length must not change
        for pos, ch in enumerate(tail):
            if any(ch in s.starts and s.prefix_matches(lowered, pos) for s in secrets):
                return base + pos
        return len(text)

    def mask_piece(self, held: str, piece: str) -> tuple[str, str]:
        """A text arriving in pieces: ``held`` (kept back from the previous piece) and ``piece``
        masked together; returns what may be stored now and what to keep back for the next piece
        (the end that could begin a secret). Stored parts never hold any part of a secret that a
        later piece completes."""
        masked = self.mask(held + piece) or ""
        cut = self.partial_start(masked)
        return masked[:cut], masked[cut:]

    def mask_cut(self, text: str, limit: int, *, truncated: bool = False) -> str:
        """``text`` masked, then cut to ``limit`` characters. ``truncated``: the text is the
        beginning of something longer, so a possible beginning of a secret at its end is dropped."""
        masked = self.mask(text) or ""
        if truncated:
            masked = masked[: self.partial_start(masked)] + " [cut]"
        if len(masked) > limit:
            masked = masked[: max(0, limit - 6)] + " [cut]"
        return masked

    def mask_obj(self, value: Any) -> Any:
        """``value`` (JSON-like) with every string masked, keys included."""
        if isinstance(value, str):
            return self.mask(value)
        if isinstance(value, dict):
            return {self.mask(str(k)): self.mask_obj(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [self.mask_obj(v) for v in value]
        return value


# -- logging ---------------------------------------------------------------------------------------

_CONTROL = re.compile(r"[\x00-\x1f\x7f\u0085\u2028\u2029]")


def escape_controls(text: str) -> str:
    """Control characters as escapes, so no logged value can start a line of its own."""
    return _CONTROL.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)


_log_masks: list[SecretMask] = []
_log_lock = threading.Lock()


def mask_for_log(text: str) -> str:
    for m in list(_log_masks):
        text = m.mask(text) or text
    return text


def install_log_masking(mask: SecretMask) -> None:
    """Mask this service's secrets in every log record of the process, whichever library logs it
    (urllib3 logs request lines, query strings included, at DEBUG), and escape control characters
    in every message, so a value taken from a request cannot forge a line of the log.

    Done at record creation, so every handler (files, journald, pytest's capture) sees only the
    masked text. The record's message is formatted once and its arguments dropped; a traceback is
    formatted, masked and escaped into ``exc_text`` (each of its lines starts with ``| ``) and the
    exception object dropped, so no handler formats it again unmasked.
    """
    with _log_lock:
        if any(m is mask for m in _log_masks):
            return
        first = not _log_masks
        _log_masks.append(mask)
    if not first:
        return
    make: Callable[..., logging.LogRecord] = logging.getLogRecordFactory()

    def masked_record(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = make(*args, **kwargs)
        try:
            message = record.getMessage()
        except Exception:  # a bad format string: leave the record to logging's own error path
            return record
        record.msg, record.args = escape_controls(mask_for_log(message)), None
        if record.exc_info and record.exc_info[0] is not None:
            text = "".join(traceback.format_exception(*record.exc_info)).rstrip("\n")
            record.exc_text = "\n".join("| " + escape_controls(line) for line in mask_for_log(text).split("\n"))
            record.exc_info = None
        if record.stack_info:
            record.stack_info = "\n".join("| " + escape_controls(line)
                                          for line in mask_for_log(record.stack_info).split("\n"))
        return record

    logging.setLogRecordFactory(masked_record)
