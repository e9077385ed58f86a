"""What executors call, authenticated by the callback token of the event they were sent: the
check's result, and chunks of its log."""

from __future__ import annotations

import asyncio
from typing import Literal

from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field

from lakewarden.checks.routes import Api
from lakewarden.checks.service import MAX_OUTPUT_CHARS
from lakewarden.errors import BadInput


class CallbackBody(BaseModel):
    """An executor's result, POSTed to the event's ``callback_url``."""

    model_config = ConfigDict(extra="forbid")
    status: Literal["SUCCESS", "FAILED"]
    metadata: dict[str, str] = Field(default_factory=dict, max_length=1000)


def router(api: Api) -> APIRouter:
    routes = APIRouter(tags=["executors"])

    @routes.post(
        "/api/v1/repositories/{repo}/refs/{ref}/checks/{check_id}",
        summary="Callback: the executor's result (token from the event)",
    )
    def callback(
        request: Request, repo: str, ref: str, check_id: str, body: CallbackBody,
        token: str = Query(min_length=1, max_length=512),
    ) -> JSONResponse:
        client = request.client.host if request.client else None
        return api.answer(200, api.service().callback(repo, ref, check_id, token, body.model_dump(), client=client))

    @routes.post(
        "/api/v1/repositories/{repo}/refs/{ref}/checks/{check_id}/output",
        summary=f"Append to the executor log (the event's output_url; text, at most {MAX_OUTPUT_CHARS} characters)",
        openapi_extra={"requestBody": {"required": True, "content": {"text/plain": {"schema": {"type": "string"}}}}},
    )
    async def append_output(request: Request, repo: str, ref: str, check_id: str) -> JSONResponse:
        token = request.query_params.get("token") or ""
        header = request.headers.get("authorization", "")
        if not token and header.lower().startswith("bearer "):
            token = header[7:].strip()
        raw = await request.body()
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise BadInput("the log must be UTF-8 text") from None
        client = request.client.host if request.client else None
        result = await asyncio.to_thread(api.service().append_output, repo, ref, check_id, token, text, client=client)
        return api.answer(200, result)

    return routes
