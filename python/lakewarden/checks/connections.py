"""Connection handling an attacker cannot exhaust: uvicorn's h11 protocol with deadlines and caps.

uvicorn alone reads headers without a deadline, restarts its body timeout with every byte (it has
none; the app had one per chunk), and counts idle connections toward ``limit_concurrency``, so 2,000
sockets that send nothing answer every later request with 503. This module subclasses uvicorn's
:class:`~uvicorn.protocols.http.h11_impl.H11Protocol` (the parser and ASGI bridge stay uvicorn's)
and adds, per connection, one phase and one deadline:

``pending``
    open, no complete request head yet (a new connection, or a keep-alive one between requests).
    Its head must be complete ``header_timeout`` after the phase began, however the bytes trickle.
    Pending connections count against a cap per client (IPv4 address, IPv6 /64) and a global cap;
    beyond a cap the oldest pending connection (older than ``grace``) is closed, so new connections
    (a merge gate, a callback) always get their turn, and idle sockets never count toward the
    limit on requests being handled.
``body``
    head complete, body still arriving: the whole body must arrive ``body_timeout`` after the head
    (the app answers 408 JSON at that moment; the protocol closes the connection a second later if
    the app could not).
``active``
    the request is complete and being handled; at most ``max_active`` of them at a time (503 JSON
    beyond, see ``server.ActiveLimit``), and a response must be finished ``request_timeout`` after
    the head (a client that never reads its answer is cut off).

uvicorn's own refusals (a head h11 cannot parse, a bad Content-Length) are answered in JSON with
the service's security headers.
"""

from __future__ import annotations

import asyncio
import json
import logging
from dataclasses import dataclass, field
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from lakewarden.checks.headers import SECURITY_HEADERS
from lakewarden.checks.store import client_key

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ConnectionLimits:
    """The limits of :class:`GuardedH11Protocol`; every one is documented in the checks README ("Threat model and limits")."""

    #: Seconds from a connection's opening (or the end of its previous answer) to a complete head.
    header_timeout: float = 10.0
    #: Seconds from a complete head to a complete body.
    body_timeout: float = 30.0
    #: Seconds from a complete head to a finished answer.
    request_timeout: float = 120.0
    #: Pending connections (no complete head) per client before its oldest is closed.
    per_client_pending: int = 64
    #: Pending connections of all clients before the oldest is closed.
    max_pending: int = 1024
    #: Requests handled at once; more are answered 503 at once.
    max_active: int = 512
    #: A pending connection younger than this is not closed for a cap (it may be sending its head).
    grace: float = 1.0
    #: Open connections in all; beyond, a new connection is closed at once.
    max_connections: int = 8192


@dataclass
class ConnectionGuard:
    """Shared state of one server's connections (touched only on its event loop)."""

    limits: ConnectionLimits = field(default_factory=ConnectionLimits)
    pending: dict["GuardedH11Protocol", None] = field(default_factory=dict)
    by_client: dict[str, dict["GuardedH11Protocol", None]] = field(default_factory=dict)
    open: int = 0
    counts: dict[str, int] = field(default_factory=lambda: {
        "evicted": 0, "header_timeouts": 0, "body_timeouts": 0, "request_timeouts": 0, "refused": 0})
    _enforce_at: asyncio.TimerHandle | None = None

    def add_pending(self, proto: "GuardedH11Protocol") -> None:
        self.pending[proto] = None
        self.by_client.setdefault(proto.client_key, {})[proto] = None
        self.enforce(proto.client_key)

    def remove_pending(self, proto: "GuardedH11Protocol") -> None:
        self.pending.pop(proto, None)
        mine = self.by_client.get(proto.client_key)
        if mine is not None:
            mine.pop(proto, None)
            if not mine:
                del self.by_client[proto.client_key]

    def _evict_oldest(self, queue: dict["GuardedH11Protocol", None], cap: int, now: float) -> bool:
        """Close the oldest pending connections of ``queue`` beyond ``cap``; False when some are
        still over the cap but too young to close."""
        while len(queue) > cap:
            oldest = next(iter(queue))
            if now - oldest.pending_since < self.limits.grace:
                return False
            self.counts["evicted"] += 1
            oldest.evict()
        return True

    def enforce(self, client: str | None = None) -> None:
        loop = asyncio.get_running_loop()
        now = loop.time()
        done = True
        clients = [client] if client is not None else list(self.by_client)
        for key in clients:
            queue = self.by_client.get(key)
            if queue is not None:
                done = self._evict_oldest(queue, self.limits.per_client_pending, now) and done
        done = self._evict_oldest(self.pending, self.limits.max_pending, now) and done
        if not done and self._enforce_at is None:
            # A burst younger than the grace period: look again when its oldest member is due.
            self._enforce_at = loop.call_later(self.limits.grace / 2, self._enforce_again)

    def _enforce_again(self) -> None:
        self._enforce_at = None
        self.enforce()


class GuardedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with the deadlines and caps described in the module docstring."""

    guard: ConnectionGuard  # set on the subclass :func:`protocol_class` makes

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self.client_key = client_key(self.client[0] if self.client else None)
        self.pending_since = self.loop.time()
        self.phase = "new"
        self.received_in_phase = 0
        self._timer: asyncio.TimerHandle | None = None
        self._counted = False
        if self.guard.open >= self.guard.limits.max_connections:
            self.guard.counts["refused"] += 1
            transport.abort()
            return
        self.guard.open += 1
        self._counted = True
        self._enter_pending()

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_timer()
        self.guard.remove_pending(self)
        if self._counted:
            self._counted = False
            self.guard.open -= 1
        self.phase = "closed"
        super().connection_lost(exc)

    # -- phases ----------------------------------------------------------------------------------

    def _cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _set_timer(self, seconds: float, callback: Any) -> None:
        self._cancel_timer()
        self._timer = self.loop.call_later(seconds, callback)

    def _enter_pending(self) -> None:
        self.phase = "pending"
        self.received_in_phase = 0
        self.pending_since = self.loop.time()
        self._set_timer(self.guard.limits.header_timeout, self._header_deadline)
        self.guard.add_pending(self)

    def _sync_phase(self, before: Any) -> None:
        """After uvicorn handled events: did a request begin, or its body end?"""
        if self.phase == "closed" or self.transport.is_closing():
            return
        cycle = self.cycle
        if cycle is not None and cycle is not before and self.phase == "pending":
            self.guard.remove_pending(self)
            self.request_started = self.loop.time()
            if cycle.more_body:
                self.phase = "body"
                # The app answers 408 at body_timeout; this closes the connection if it could not.
                self._set_timer(self.guard.limits.body_timeout + 1.0, self._body_deadline)
            else:
                self._enter_active()
        elif self.phase == "body" and cycle is not None and not cycle.more_body:
            self._enter_active()

    def _enter_active(self) -> None:
        self.phase = "active"
        remaining = self.guard.limits.request_timeout - (self.loop.time() - self.request_started)
        self._set_timer(max(remaining, 0.0), self._request_deadline)

    # -- events ----------------------------------------------------------------------------------

    def data_received(self, data: bytes) -> None:
        if self.phase == "pending":
            self.received_in_phase += len(data)
        before = self.cycle
        super().data_received(data)
        self._sync_phase(before)

    def on_response_complete(self) -> None:
        before = self.cycle
        super().on_response_complete()
        if self.phase == "closed" or self.transport.is_closing():
            return
        if self.phase == "body":
            # Answered before the body was complete (408, 413, a refusal that did not read it):
            # the rest of the body is not waited for.
            self.transport.close()
        elif self.cycle is not before:  # a pipelined request began at once
            self.phase = "pending"
            self._sync_phase(before)
        elif self.phase != "pending":
            self._enter_pending()  # keep-alive: the next head has header_timeout to arrive

    # -- deadlines -------------------------------------------------------------------------------

    def evict(self) -> None:
        """Closed to make room (a cap of pending connections was reached)."""
        self.guard.remove_pending(self)
        if not self.transport.is_closing():
            self.transport.close()

    def _header_deadline(self) -> None:
        self._timer = None
        if self.phase != "pending" or self.transport.is_closing():
            return
        self.guard.counts["header_timeouts"] += 1
        self.guard.remove_pending(self)
        if self.received_in_phase:
            self._send_json_and_close(408, f"request head not received within {self.guard.limits.header_timeout:g}s")
        else:
            self.transport.close()  # an idle connection: nothing to answer

    def _body_deadline(self) -> None:
        self._timer = None
        if self.phase == "body" and not self.transport.is_closing():
            self.guard.counts["body_timeouts"] += 1
            self.transport.close()

    def _request_deadline(self) -> None:
        self._timer = None
        if self.phase == "active" and not self.transport.is_closing():
            self.guard.counts["request_timeouts"] += 1
            log.warning("answer to %s not finished within %gs; connection closed", self.client_key,
                        self.guard.limits.request_timeout)
            self.transport.close()

    # -- refusals in JSON --------------------------------------------------------------------------

    def _send_json_and_close(self, status: int, message: str) -> None:
        body = json.dumps({"error": message}).encode()
        head = [f"HTTP/1.1 {status} {'Bad Request' if status == 400 else 'Request Timeout'}",
                "content-type: application/json", f"content-length: {len(body)}", "connection: close"]
        head += [f"{k.lower()}: {v}" for k, v in SECURITY_HEADERS.items()]
        try:
            self.transport.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body)
        finally:
            self.transport.close()

    def send_400_response(self, msg: str) -> None:
        """uvicorn's answer to a request h11 cannot parse, in JSON with the security headers."""
        if self.conn.our_state in {h11.IDLE, h11.SEND_RESPONSE}:
            self._send_json_and_close(400, "invalid HTTP request (malformed request line, header or Content-Length)")
        else:
            self.transport.close()


def protocol_class(guard: ConnectionGuard) -> type[GuardedH11Protocol]:
    """A protocol class bound to one server's guard (uvicorn instantiates it per connection)."""
    return type("BoundGuardedH11Protocol", (GuardedH11Protocol,), {"guard": guard})
