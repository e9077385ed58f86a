"""The headers every answer of the checks service carries, refusals included: the app's (its
middleware and its JSON errors, lakewarden.checks.server) and the connection layer's own
(lakewarden.checks.connections answers requests uvicorn cannot parse)."""

from __future__ import annotations

#: The pages load only their own script and style; nothing inline, nothing from elsewhere.
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
SECURITY_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}
