"""The HTTP API, merge gate and pages of ``lakewarden checks serve``: FastAPI on uvicorn.

Request bodies are pydantic models (unknown fields refused), so the OpenAPI document the service
serves at ``/api/v1/openapi.json`` is the contract; the same document is kept in the repository
(``openapi.json`` next to this module; regenerate with ``python -m lakewarden.checks.server``).

Every refusal is JSON ``{"error": one line, ...}`` with the security headers: 400 bad input (also
bad JSON, bad Content-Length, a request uvicorn cannot parse), 401 API token, 403 callback token,
404, 408 head or body too slow, 409 wrong state, 412 merge blocked, 413 body or log too large, 503
too many requests at once or the store down (health). 5xx are the server's faults (a bug, an
unreadable catalog) and name no file or path. Every JSON answer passes the service's secret mask.
No access log is written: callback URLs carry tokens in their query. Connections are handled by
:mod:`lakewarden.checks.connections` (deadlines and caps uvicorn lacks).
"""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
import socket
import threading
from pathlib import Path
from typing import Any

import uvicorn
from fastapi import FastAPI, Header, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from lakewarden.checks.connections import ConnectionGuard, ConnectionLimits, protocol_class
from lakewarden.checks.errors import CatalogError, ChecksError, Unauthorized
from lakewarden.checks.headers import SECURITY_HEADERS
from lakewarden.checks.masking import mask_for_log
from lakewarden.checks.routes import Api
from lakewarden.checks.routes import checks as checks_routes
from lakewarden.checks.routes import executors as executors_routes
from lakewarden.checks.routes import gate as gate_routes
from lakewarden.checks.routes import pages as pages_routes
from lakewarden.checks.routes import service as service_routes
from lakewarden.checks.service import ChecksService
from lakewarden.errors import BadInput

log = logging.getLogger(__name__)

#: Largest request body accepted (callbacks, gate events, log chunks).
MAX_BODY = 1 << 20
#: A client must send its whole body within this many seconds.
BODY_TIMEOUT = 30.0
OPENAPI_PATH = "/api/v1/openapi.json"
OPENAPI_FILE = Path(__file__).with_name("openapi.json")


# -- limits ----------------------------------------------------------------------------------------


def _json_error(http_status: int, message: str, **extra: Any) -> JSONResponse:
    """A refusal: one line (masked like everything the service answers) and the security headers."""
    return JSONResponse({"error": mask_for_log(message.replace("\n", " ")), **extra}, status_code=http_status,
                        headers=SECURITY_HEADERS)


class BodyLimits:
    """Refuses bad or too large Content-Length at once, and bodies that are too large or too slow.

    (uvicorn's h11 parser already answers 400 to a Content-Length that is not a number; this
    layer covers what reaches the app, including chunked bodies, which have no length up front.)
    """

    def __init__(self, app: ASGIApp, max_body: int = MAX_BODY, timeout: float = BODY_TIMEOUT):
        self.app = app
        self.max_body = max_body
        self.timeout = timeout

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        lengths = [v for k, v in scope["headers"] if k == b"content-length"]
        if lengths:
            raw = lengths[0].decode("latin-1").strip()
            if len(lengths) > 1 or not raw.isdigit():
                await _json_error(400, "Content-Length must be one non-negative integer")(scope, receive, send)
                return
            if int(raw) > self.max_body:
                await _json_error(413, f"request body larger than {self.max_body} bytes")(scope, receive, send)
                return
        seen = 0
        # One deadline for the whole body, counted from the complete head: a client sending a
        # byte now and then does not get a new timeout with each one.
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.timeout

        async def limited() -> Message:
            nonlocal seen
            remaining = deadline - loop.time()
            try:
                if remaining <= 0:
                    raise asyncio.TimeoutError
                message = await asyncio.wait_for(receive(), remaining)
            except asyncio.TimeoutError:
                raise StarletteHTTPException(408, f"request body not received within {self.timeout:g}s") from None
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_body:
                    raise StarletteHTTPException(413, f"request body larger than {self.max_body} bytes")
            return message

        await self.app(scope, limited, send)


class ActiveLimit:
    """At most ``max_active`` requests handled at once; more are answered 503 (JSON) at once.

    Only requests with a complete head count: idle and slow connections are the connection
    layer's (``connections.py``), so they can never fill this limit.
    """

    def __init__(self, app: ASGIApp, max_active: int = 512):
        self.app = app
        self.max_active = max_active
        self.active = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if self.active >= self.max_active:
            answer = _json_error(503, f"more than {self.max_active} requests at once; try again")
            answer.headers["Retry-After"] = "1"
            await answer(scope, receive, send)
            return
        self.active += 1
        try:
            await self.app(scope, receive, send)
        finally:
            self.active -= 1


class SecurityHeaders:
    """CSP and friends on every answer (the API's JSON as well as the pages)."""

    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                present = {k.lower() for k, _ in message.get("headers", [])}
                extra = [(k.lower().encode(), v.encode()) for k, v in SECURITY_HEADERS.items()
                         if k.lower().encode() not in present]
                message = {**message, "headers": [*message.get("headers", []), *extra]}
            await send(message)

        await self.app(scope, receive, with_headers)


def _validation_message(exc: RequestValidationError) -> tuple[str, str | None]:
    """One line for the first problem of a request, and the field it concerns."""
    errors = exc.errors()
    if not errors:
        return "invalid request", None
    first = errors[0]
    loc = [str(p) for p in first.get("loc", ()) if p not in ("body", "query", "path", "header")]
    if first.get("type") == "json_invalid":
        reason = (first.get("ctx") or {}).get("error", "invalid JSON")
        return f"request body is not JSON: {reason}", None
    field = ".".join(loc) or None
    message = str(first.get("msg", "invalid value")).replace("\n", " ")
    if first.get("type") == "extra_forbidden":
        message = "unknown field"
    if field is None and first.get("type") == "missing":
        return "a JSON body is required", None
    return (f"{field}: {message}" if field else message), field


# -- the app ---------------------------------------------------------------------------------------


def create_app(
    service: ChecksService | None, api_token: str | None, *, body_timeout: float = BODY_TIMEOUT, max_active: int = 512
) -> FastAPI:
    """The ASGI app; ``service`` may be None only to render the OpenAPI document."""
    app = FastAPI(
        title="lakewarden branch checks",
        version="1",
        summary="Long-running checks of lakeFS commits, their callbacks, and a pre-merge gate.",
        openapi_url=OPENAPI_PATH,
        docs_url=None,
        redoc_url=None,
    )
    app.add_middleware(BodyLimits, timeout=body_timeout)
    app.add_middleware(SecurityHeaders)
    app.add_middleware(ActiveLimit, max_active=max_active)

    def svc() -> ChecksService:
        assert service is not None
        return service

    def answer(status: int, payload: Any) -> JSONResponse:
        return JSONResponse(svc().mask(payload), status_code=status)

    def require_api_token(authorization: str | None = Header(default=None, include_in_schema=False)) -> None:
        given = authorization[7:].strip() if authorization and authorization.lower().startswith("bearer ") else ""
        if not api_token or not given or not hmac.compare_digest(given.encode(), api_token.encode()):
            raise Unauthorized("missing or wrong API token (Authorization: Bearer ...)")

    @app.exception_handler(BadInput)
    async def bad_input(_: Request, exc: BadInput) -> JSONResponse:
        message = str(exc).replace("\n", " ")
        return _json_error(400, str(service.secrets.mask(message)) if service else message, field=exc.field)

    @app.exception_handler(ChecksError)
    async def refused(request: Request, exc: ChecksError) -> JSONResponse:
        if exc.http_status >= 500:
            # A fault of the server or its catalog: the reason (paths, URLs) goes to the log only.
            log.error("%s %s: %s", request.method, request.url.path, exc)
            return _json_error(exc.http_status, "the repository catalog could not answer; see the service log"
                               if isinstance(exc, CatalogError) else "internal error; see the service log")
        payload = {"error": str(exc).replace("\n", " "), **exc.details}
        return JSONResponse(svc().mask(payload), status_code=exc.http_status)

    @app.exception_handler(RequestValidationError)
    async def invalid(_: Request, exc: RequestValidationError) -> JSONResponse:
        message, field = _validation_message(exc)
        return _json_error(400, message, field=field)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        if exc.status_code == 404 and exc.detail == "Not Found":
            return _json_error(404, f"no such endpoint: {request.url.path}")
        if exc.status_code == 405:
            return _json_error(405, f"{request.method} not allowed on {request.url.path}")
        return _json_error(exc.status_code, str(exc.detail))

    @app.exception_handler(Exception)
    async def crashed(request: Request, exc: Exception) -> JSONResponse:
        # The log record masks and escapes the message and the traceback.
        log.error("%s %s failed: %s: %s", request.method, request.url.path, exc.__class__.__name__, exc,
                  exc_info=(type(exc), exc, exc.__traceback__))
        return _json_error(500, "internal error; see the service log")

    api = Api(service=svc, answer=answer, require_api_token=require_api_token, refuse=_json_error)
    for routes in (service_routes, gate_routes, checks_routes, executors_routes, pages_routes):
        app.include_router(routes.router(api))
    return app


def openapi_document() -> dict[str, Any]:
    """The OpenAPI document of the checks API (what the service serves at OPENAPI_PATH)."""
    return create_app(None, None).openapi()


# -- running -----------------------------------------------------------------------------------------


class ChecksServer:
    """uvicorn serving the app; ``url`` is where it listens (the socket is bound on creation)."""

    def __init__(
        self,
        service: ChecksService,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        api_token: str | None = None,
        body_timeout: float = BODY_TIMEOUT,
        limits: ConnectionLimits | None = None,
    ):
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self.socket = socket.socket(family, socket.SOCK_STREAM)
        self.socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            self.socket.bind((host, port))
        except OSError:
            self.socket.close()
            raise
        self.socket.listen(2048)
        self.host, self.port = self.socket.getsockname()[:2]
        self.url = f"http://{self.host}:{self.port}" if family == socket.AF_INET else f"http://[{self.host}]:{self.port}"
        if not service.public_url:
            service.public_url = self.url
        if api_token:
            service.secrets.add([api_token])
        self.limits = limits or ConnectionLimits(body_timeout=body_timeout)
        self.guard = ConnectionGuard(self.limits)
        self.app = create_app(service, api_token, body_timeout=self.limits.body_timeout,
                              max_active=self.limits.max_active)
        config = uvicorn.Config(
            self.app,
            http=protocol_class(self.guard),  # uvicorn's h11 protocol with deadlines and caps
            log_level="warning",
            access_log=False,  # query strings carry callback tokens
            timeout_keep_alive=max(1, int(self.limits.header_timeout)),
            limit_concurrency=None,  # idle connections must not count: see connections.py
            backlog=2048,
            timeout_graceful_shutdown=5,
        )
        self.uvicorn = uvicorn.Server(config)
        self._thread: threading.Thread | None = None

    def start(self) -> "ChecksServer":
        self._thread = threading.Thread(target=self.serve_forever, name="checks-http", daemon=True)
        self._thread.start()
        for _ in range(200):
            if self.uvicorn.started:
                break
            threading.Event().wait(0.025)
        return self

    def serve_forever(self) -> None:
        self.uvicorn.run(sockets=[self.socket])

    def stop(self) -> None:
        self.uvicorn.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)
        self.socket.close()


def main() -> None:
    """Write the OpenAPI document into the package (run after changing the API)."""
    OPENAPI_FILE.write_text(json.dumps(openapi_document(), indent=2, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {OPENAPI_FILE}")


if __name__ == "__main__":
    main()
