"""Property tests of the secret mask: random secrets, every spelling, every way of cutting a text.

The end-to-end counterpart (a live service, random secrets through URL path, query, headers,
body, errors, metadata, log appends and a restart) is ``test_secrets_e2e_property``.
"""

from __future__ import annotations

import base64
import json
import re
from urllib.parse import quote, quote_plus, urlencode

import requests.utils
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from lakewarden.checks.masking import MASK, SecretMask

# Secrets: any characters but lone surrogates (they cannot be UTF-8 encoded at all).
SECRETS = st.text(st.characters(blacklist_categories=("Cs",)), min_size=4, max_size=24)
AROUND = st.text(st.characters(blacklist_categories=("Cs",)), max_size=30)
USERS = st.text(st.characters(min_codepoint=0x21, max_codepoint=0x7E), min_size=0, max_size=12)

PROPERTY = settings(max_examples=100, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])


def spellings(secret: str, user: str) -> dict[str, str]:
    """Every way the service's libraries write a value down."""
    return {
        "raw": secret,
        "percent, all": quote(secret, safe=""),
        "percent, path (keeps /)": quote(secret),
        "percent, as requests writes a URL": requests.utils.requote_uri(quote(secret, safe="!#$&'()*+,/:;=?@[]~")),
        "percent, lower-case hex": re.sub("%[0-9A-F]{2}", lambda m: m.group().lower(), quote(secret, safe="")),
        "percent, twice": quote(quote(secret, safe=""), safe=""),
        "form": quote_plus(secret),
        "form body": urlencode({"k": secret})[2:],
        "json": json.dumps(secret)[1:-1],
        "json, unicode kept": json.dumps(secret, ensure_ascii=False)[1:-1],
        "json of percent": json.dumps(quote(secret, safe=""))[1:-1],
        "python repr": repr(secret)[1:-1],
        "basic auth": base64.b64encode(f"{user}:{secret}".encode()).decode(),
        "base64 url-safe": base64.urlsafe_b64encode(f"{user}:{secret}".encode()).decode(),
    }


def mask_of(*secrets: str, user: str | None = None) -> SecretMask:
    mask = SecretMask()
    mask.add(list(secrets), basic_auth_user=user)
    return mask


@PROPERTY
@given(secret=SECRETS, user=USERS, before=AROUND, after=AROUND)
def test_every_spelling_is_masked_wherever_it_stands(secret: str, user: str, before: str, after: str) -> None:
    mask = mask_of(secret, user=user)
    for name, form in spellings(secret, user).items():
        masked = mask.mask(before + form + after)
        assert form not in masked, (name, form, masked)
        assert MASK in masked, name


@PROPERTY
@given(secret=st.text(st.characters(blacklist_categories=("Cs",)), min_size=8, max_size=24), user=USERS,
       before=AROUND, after=AROUND)
def test_base64_is_masked_whatever_precedes_the_secret(secret: str, user: str, before: str, after: str) -> None:
    """Without knowing the user name (a Basic header of an action file's Airflow login): every
    secret of 8 bytes or more is found in base64 at any alignment, and the whole run is masked."""
    mask = mask_of(secret)
    for encode in (base64.b64encode, base64.urlsafe_b64encode):
        form = encode(f"{user}:{secret}".encode()).decode()
        masked = mask.mask(f"{before} Basic {form} {after}")
        assert form not in masked and form.rstrip("=")[-4:] not in masked.split("Basic", 1)[1][:8]


@PROPERTY
@given(secret=SECRETS, before=AROUND, after=AROUND, data=st.data())
def test_a_text_in_pieces_never_stores_a_part_of_a_secret(secret: str, before: str, after: str, data) -> None:
    """A log uploaded in appends, cut anywhere (also inside an escape): what is stored holds no
    spelling of the secret, not even the first half of one, and nothing but the secret is lost."""
    mask = mask_of(secret)
    for form in (secret, quote(secret, safe=""), json.dumps(secret)[1:-1]):
        text = before + form + after
        cuts = sorted(data.draw(st.lists(st.integers(0, len(text)), max_size=4), label="cuts"))
        pieces = [text[i:j] for i, j in zip([0, *cuts], [*cuts, len(text)])]
        stored, held = "", ""
        for piece in pieces:
            now, held = mask.mask_piece(held, piece)
            stored += now
            assert form not in stored
            half = form[: max(len(form) // 2, 2)]
            assert not (stored + held).endswith(half) or held, "a beginning of the secret was stored"
        assert form not in stored + (mask.mask(held) or "")


@settings(PROPERTY, max_examples=50)
@given(secret=SECRETS, before=st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=300), data=st.data())
def test_masked_then_cut_never_keeps_a_beginning(secret: str, before: str, data) -> None:
    """An error is masked whole and then cut; an answer read only in part loses its end when
    that end could begin a secret."""
    assume(not set(before) & set(secret + "%\\+"))  # what precedes cannot itself begin the secret
    mask = mask_of(secret)
    limit = data.draw(st.integers(10, 300), label="limit")
    text = before + secret + "tail"
    out = mask.mask_cut(text, limit)
    assert len(out) <= limit and secret not in out.removesuffix(" [cut]")
    cut_inside = len(before) + data.draw(st.integers(1, len(secret) - 1), label="read up to")
    partial = mask.mask_cut(text[:cut_inside], 10_000, truncated=True).removesuffix(" [cut]")
    assert len(partial) <= len(before), "the beginning of the secret was kept"


def test_short_values_are_not_secrets_and_controls_are_escaped_in_logs() -> None:
    from lakewarden.checks.masking import escape_controls

    mask = mask_of("abc", "")
    assert mask.mask("abc abc") == "abc abc"
    assert escape_controls("a\nb\rc\x1b[31m\u2028") == "a\\nb\\rc\\x1b[31m\\u2028"
