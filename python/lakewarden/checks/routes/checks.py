"""A commit's checks: list them, trigger them, one check, retry one, read its executor log."""

from __future__ import annotations

from fastapi import APIRouter, Body, Depends, Query
from fastapi.responses import JSONResponse, PlainTextResponse
from pydantic import BaseModel, ConfigDict, Field

from lakewarden.checks.routes import CHECK_ID, Api


class TriggerBody(BaseModel):
    """Optional body of a trigger: one check only."""

    model_config = ConfigDict(extra="forbid")
    id: str | None = Field(default=None, pattern=CHECK_ID)


def router(api: Api) -> APIRouter:
    routes = APIRouter(tags=["checks"])

    @routes.get("/api/v1/repositories/{repo}/refs/{ref}/checks", summary="Checks of a commit")
    def list_checks(repo: str, ref: str) -> JSONResponse:
        return api.answer(200, api.service().list(repo, ref))

    @routes.post(
        "/api/v1/repositories/{repo}/refs/{ref}/checks",
        summary="Trigger the checks of a commit (in the background)",
        status_code=202,
        dependencies=[Depends(api.require_api_token)],
    )
    def trigger(
        repo: str,
        ref: str,
        id: str | None = Query(default=None, pattern=CHECK_ID),  # noqa: A002 - the API's name
        body: TriggerBody | None = Body(default=None),
    ) -> JSONResponse:
        report = api.service().trigger(repo, ref, id or (body.id if body else None))
        return api.answer(202 if any(c["triggered"] for c in report["checks"]) else 200, report)

    @routes.get("/api/v1/repositories/{repo}/refs/{ref}/checks/{check_id}", summary="One check")
    def get_check(repo: str, ref: str, check_id: str) -> JSONResponse:
        return api.answer(200, api.service().get(repo, ref, check_id))

    @routes.post(
        "/api/v1/repositories/{repo}/refs/{ref}/checks/{check_id}/retry",
        summary="Retry a FAILED or LOST check",
        status_code=202,
        dependencies=[Depends(api.require_api_token)],
    )
    def retry(repo: str, ref: str, check_id: str) -> JSONResponse:
        return api.answer(202, api.service().retry(repo, ref, check_id))

    @routes.get(
        "/api/v1/repositories/{repo}/refs/{ref}/checks/{check_id}/output",
        summary="The executor log of the check's current execution",
        response_class=PlainTextResponse,
    )
    def get_output(repo: str, ref: str, check_id: str) -> PlainTextResponse:
        return PlainTextResponse(api.service().output(repo, ref, check_id))

    return routes
