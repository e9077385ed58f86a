"""The ``webhook`` executor: POST the check event to a URL, like a lakeFS webhook hook.

Properties: ``url`` (required), ``timeout`` (of the HTTP request, default 30s), ``query_params``
(name -> value or list of values), ``headers`` (name -> value; use ``{{ ENV.NAME }}`` for
secrets), ``output_url`` (link to the logs; ``{{ execution_id }}``, ``{{ check_id }}``,
``{{ commit_id }}``, ``{{ repository_id }}`` are filled in). A 2xx answer means the job started;
a JSON answer may carry its own ``output_url``.
"""

from __future__ import annotations

import json
from typing import Any, Mapping

import requests

from lakewarden.durations import parse_duration
from lakewarden.checks.executors import (
    ExecutionRequest,
    ExecutionStarted,
    ExecutorError,
    answer_excerpt,
    fill_placeholders,
    no_redirect,
)
from lakewarden.errors import BadInput

_KEYS = {"url", "timeout", "query_params", "headers", "output_url"}


def check_url(value: Any, *, source: str, field: str) -> str:
    if not isinstance(value, str) or not value.startswith(("http://", "https://")):
        raise BadInput(f"must be an http(s) URL, got {value!r}", source=source, field=field)
    return value


def event_placeholders(request: ExecutionRequest) -> dict[str, str]:
    e = request.event
    return {
        "execution_id": request.execution_id,
        "check_id": request.check_id,
        "commit_id": str(e.get("commit_id", "")),
        "repository_id": str(e.get("repository_id", "")),
    }


class WebhookExecutor:
    type_name = "webhook"
    bound_keys = frozenset({"url", "headers"})
    #: With a config endpoint, the action may only say how long to wait and where its log is.
    action_keys = frozenset({"timeout", "output_url"})

    def validate(self, properties: Mapping[str, Any], *, source: str, field: str) -> None:
        unknown = set(properties) - _KEYS
        if unknown:
            raise BadInput(f"unknown webhook properties {sorted(unknown)}", source=source, field=field)
        if "url" not in properties:
            raise BadInput("webhook needs a url", source=source, field=f"{field}.url")
        check_url(properties["url"], source=source, field=f"{field}.url")
        if "timeout" in properties:
            parse_duration(properties["timeout"], source=source, field=f"{field}.timeout")
        params = properties.get("query_params", {})
        if not isinstance(params, dict) or not all(
            isinstance(v, (str, int, float)) or (isinstance(v, list) and all(isinstance(i, (str, int, float)) for i in v))
            for v in params.values()
        ):
            raise BadInput(
                "query_params must map names to a value or a list of values", source=source, field=f"{field}.query_params"
            )
        headers = properties.get("headers", {})
        if not isinstance(headers, dict) or not all(isinstance(v, (str, int)) for v in headers.values()):
            raise BadInput("headers must map names to strings", source=source, field=f"{field}.headers")
        if "output_url" in properties and not isinstance(properties["output_url"], str):
            raise BadInput("output_url must be a string", source=source, field=f"{field}.output_url")

    def start(self, request: ExecutionRequest) -> ExecutionStarted:
        p = request.properties
        timeout = parse_duration(p.get("timeout", "30s")).total_seconds()
        params = {k: [str(i) for i in v] if isinstance(v, list) else str(v) for k, v in p.get("query_params", {}).items()}
        headers = {str(k): str(v) for k, v in p.get("headers", {}).items()}
        try:
            response = requests.post(p["url"], params=params, headers=headers, json=request.event, timeout=timeout,
                                     allow_redirects=False, stream=True)
        except requests.RequestException as exc:
            raise ExecutorError(f"webhook {p['url']} unreachable: {exc.__class__.__name__}: {exc}") from None
        with response:
            no_redirect(response, "webhook")
            if not 200 <= response.status_code < 300:
                raise ExecutorError(f"webhook answered HTTP {response.status_code}: "
                                    f"{answer_excerpt(response, request.secrets)}")
            try:
                raw = response.raw.read(64 * 1024, decode_content=True)
            except Exception:
                raw = b""
        output_url = None
        if "output_url" in p:
            output_url = fill_placeholders(p["output_url"], event_placeholders(request))
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        if isinstance(body, dict) and isinstance(body.get("output_url"), str):
            output_url = body["output_url"]
        return ExecutionStarted(output_url=output_url)
