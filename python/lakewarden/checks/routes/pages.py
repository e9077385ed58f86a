"""The web pages (a commit's checks, the recent commits) and their assets: static files that
call the API from the browser; not in the OpenAPI document."""

from __future__ import annotations

from importlib import resources

from fastapi import APIRouter
from fastapi.responses import Response

from lakewarden.checks.routes import Api

#: the assets the pages load (nothing else is served from the page package)
ASSETS = {"commit.js": "text/javascript", "index.js": "text/javascript", "checks.css": "text/css"}


def _page(name: str) -> Response:
    body = (resources.files("lakewarden.checks.page") / name).read_bytes()
    return Response(body, media_type="text/html; charset=utf-8")


def router(api: Api) -> APIRouter:
    routes = APIRouter(include_in_schema=False)

    @routes.get("/")
    @routes.get("/ui")
    def index_page() -> Response:
        return _page("index.html")

    @routes.get("/ui/repositories/{repo}/refs/{ref}")
    def commit_page(repo: str, ref: str) -> Response:
        return _page("commit.html")

    @routes.get("/ui/assets/{name}")
    def asset(name: str) -> Response:
        if name not in ASSETS:
            return api.refuse(404, f"no such asset: {name}")
        return Response((resources.files("lakewarden.checks.page") / name).read_bytes(), media_type=ASSETS[name])

    return routes
