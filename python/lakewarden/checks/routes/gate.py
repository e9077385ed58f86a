"""The merge gate: lakeFS's pre-merge webhook asks whether the source commit's checks passed."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field

from lakewarden.checks.routes import Api


class PreMergeEvent(BaseModel):
    """lakeFS's hook event (``EventInfo``) as a pre-merge webhook sends it; other fields are ignored."""

    model_config = ConfigDict(extra="allow")
    event_type: str = "pre-merge"
    repository_id: str = Field(min_length=1, max_length=1024)
    branch_id: str = Field(min_length=1, max_length=1024)
    source_ref: str = Field(min_length=1, max_length=1024)
    commit_id: str | None = Field(default=None, max_length=1024)


def router(api: Api) -> APIRouter:
    routes = APIRouter(tags=["gate"])

    @routes.post(
        "/api/v1/hooks/pre-merge",
        summary="Merge gate: lakeFS pre-merge webhook",
        responses={412: {"description": "merge blocked; reasons listed"}},
    )
    def gate(event: PreMergeEvent) -> JSONResponse:
        decision = api.service().gate(event.model_dump())
        return api.answer(200 if decision.allowed else 412, decision.body)

    return routes
