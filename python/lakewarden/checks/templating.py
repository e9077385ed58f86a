"""``{{ ENV.NAME }}`` templating of executor properties, as lakeFS hooks do it.

Secrets (webhook headers, Airflow passwords) must not be committed into ``_lakefs_actions``; the
definition names an environment variable of the service instead. Only variables whose name starts
with the configured prefix (lakeFS's default ``LAKEFSACTION_``) may be read, because anyone who can
commit an action file could otherwise send any of the service's secrets to a URL of their choice.
Every substituted value is reported to a ``rendered`` set, which the service's
:class:`~lakewarden.checks.masking.SecretMask` uses to keep it out of everything stored or shown.
"""

from __future__ import annotations

import re
from typing import Any, Mapping

from lakewarden.errors import BadInput

_ENV_REF = re.compile(r"\{\{\s*ENV\.([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")


def render_env(
    value: Any,
    env: Mapping[str, str],
    *,
    prefix: str,
    source: str | None = None,
    field: str | None = None,
    rendered: set[str] | None = None,
) -> Any:
    """``value`` with every ``{{ ENV.NAME }}`` in its strings replaced, recursively.

    Raises :class:`BadInput` naming the field when a variable is missing or not allowed, so a
    misconfigured check fails when it is triggered rather than sending an empty secret.
    """
    if isinstance(value, str):

        def substitute(match: re.Match[str]) -> str:
            name = match.group(1)
            if prefix and not name.startswith(prefix):
                raise BadInput(
                    f"environment variable {name} may not be used (only names starting with {prefix})",
                    source=source,
                    field=field,
                )
            if name not in env:
                raise BadInput(f"environment variable {name} is not set", source=source, field=field)
            if rendered is not None and env[name]:
                rendered.add(env[name])
            return env[name]

        return _ENV_REF.sub(substitute, value)
    if isinstance(value, Mapping):
        return {
            k: render_env(
                v, env, prefix=prefix, source=source, field=f"{field}.{k}" if field else str(k), rendered=rendered
            )
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [
            render_env(
                v, env, prefix=prefix, source=source, field=f"{field}[{i}]" if field else f"[{i}]", rendered=rendered
            )
            for i, v in enumerate(value)
        ]
    return value
