"""The service's own state: liveness (with the state store), recent commits, rejected callbacks."""

from __future__ import annotations

import logging

from fastapi import APIRouter, Query
from fastapi.responses import JSONResponse

from lakewarden.checks.routes import Api

# the server's logger: the health endpoint's records keep the name they had before the routes moved here
log = logging.getLogger("lakewarden.checks.server")


def router(api: Api) -> APIRouter:
    routes = APIRouter(tags=["service"])

    @routes.get("/api/v1/healthz", summary="Liveness, and whether the state store answers",
                responses={503: {"description": "the state store does not answer"}})
    def health() -> JSONResponse:
        try:
            api.service().store.ping()
        except Exception as exc:
            log.error("health: the state store does not answer: %s: %s", exc.__class__.__name__, exc)
            return api.refuse(503, "the state store does not answer", status="unavailable", store="unavailable")
        return JSONResponse({"status": "ok", "store": "ok"})

    @routes.get("/api/v1/recent", summary="Recently checked commits")
    def recent() -> JSONResponse:
        return api.answer(200, {"commits": api.service().store.recent_commits()})

    @routes.get("/api/v1/rejections", summary="Rejected callbacks (bounded log; oldest dropped)")
    def rejected(limit: int = Query(default=100, ge=1, le=1000)) -> JSONResponse:
        store = api.service().store
        rows = [{**r, "at": r["at"].isoformat().replace("+00:00", "Z") if r.get("at") else None}
                for r in store.rejections(limit=limit)]
        return api.answer(200, {**store.rejection_counts(), "rejections": rows})

    return routes
