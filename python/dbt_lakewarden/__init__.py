"""dbt start-up hook: run dbt-spark Python models inside the local Spark session.

dbt-spark ships only Databricks submission helpers, so on ``method: session`` a Python model
fails with "Submission method ... is not supported". dbt imports every installed top-level
module whose name starts with ``dbt_`` when it starts (its plugin discovery), so importing this
module is the moment to register a ``session`` helper: it executes the compiled model code in
this process, against the active SparkSession (the same one the session connection uses), and
makes ``session`` the default submission method when the profile uses ``method: session``.

Nothing else is changed; on other connection methods the Databricks helpers stay the default.
"""

from __future__ import annotations

from typing import Any, Dict, Type

from dbt.adapters.base import PythonJobHelper

__all__ = ["SessionPythonJobHelper", "install"]

SUBMISSION_METHOD = "session"


class SessionPythonJobHelper(PythonJobHelper):
    """Runs a compiled dbt Python model in-process with ``spark`` bound to the active session."""

    def __init__(self, parsed_model: Dict[str, Any], credentials: Any) -> None:
        self.parsed_model = parsed_model
        self.credentials = credentials
        self.identifier = f"{parsed_model.get('schema')}.{parsed_model.get('alias')}"

    def submit(self, compiled_code: str) -> Any:
        from pyspark.sql import SparkSession

        spark = SparkSession.getActiveSession() or SparkSession.builder.enableHiveSupport().getOrCreate()
        namespace: Dict[str, Any] = {"spark": spark, "__name__": f"dbt_python_model.{self.identifier}"}
        code = compile(compiled_code, f"<dbt python model {self.identifier}>", "exec")
        exec(code, namespace)  # noqa: S102 - this is dbt's compiled model, run as dbt would remotely
        return None


def install() -> None:
    """Register the helper on dbt-spark's adapter class (idempotent)."""
    from dbt.adapters.spark.impl import SparkAdapter

    if getattr(SparkAdapter, "_lakewarden_session_helper", False):
        return
    original_helpers = SparkAdapter.python_submission_helpers
    original_default = SparkAdapter.default_python_submission_method

    def python_submission_helpers(self: Any) -> Dict[str, Type[PythonJobHelper]]:
        helpers = dict(original_helpers.fget(self))  # type: ignore[union-attr]
        helpers[SUBMISSION_METHOD] = SessionPythonJobHelper
        return helpers

    def default_python_submission_method(self: Any) -> str:
        method = str(getattr(self.config.credentials, "method", ""))
        if method.endswith("session"):
            return SUBMISSION_METHOD
        return original_default.fget(self)  # type: ignore[union-attr]

    SparkAdapter.python_submission_helpers = property(python_submission_helpers)  # type: ignore[assignment]
    SparkAdapter.default_python_submission_method = property(default_python_submission_method)  # type: ignore[assignment]
    SparkAdapter._lakewarden_session_helper = True  # type: ignore[attr-defined]


try:  # dbt-spark may be absent where only the lakewarden library is used
    install()
except ImportError:  # pragma: no cover
    pass
