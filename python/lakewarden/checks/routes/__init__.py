"""The checks API's endpoints, one router per resource; :func:`lakewarden.checks.server.create_app`
puts them together behind the middlewares and error handlers every answer passes.

* :mod:`~lakewarden.checks.routes.service`: health, recently checked commits, rejected callbacks;
* :mod:`~lakewarden.checks.routes.gate`: the merge gate (lakeFS's pre-merge webhook);
* :mod:`~lakewarden.checks.routes.checks`: a commit's checks: list, trigger, one, retry, its log;
* :mod:`~lakewarden.checks.routes.executors`: what executors call: the callback, log chunks;
* :mod:`~lakewarden.checks.routes.pages`: the web pages and their assets.

Each module's ``router(api)`` takes the :class:`Api` the app made: the service, the one way an
answer is masked and sent, and the API token dependency.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from fastapi.responses import JSONResponse

from lakewarden.checks.service import ChecksService


@dataclass(frozen=True)
class Api:
    """What every router needs from the app that serves it."""

    #: the service (None only while the OpenAPI document is rendered: never called then)
    service: Callable[[], ChecksService]
    #: a JSON answer with ``status``, through the service's secret mask
    answer: Callable[[int, Any], JSONResponse]
    #: a FastAPI dependency: the request carries the API token (``Authorization: Bearer``)
    require_api_token: Callable[..., None]
    #: a refusal ``{"error": one line, **extra}`` with ``status`` and the security headers
    refuse: Callable[..., JSONResponse]


#: a check id in a path or a query (the API's pattern)
CHECK_ID = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$"
