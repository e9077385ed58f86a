"""The dbt start-up hook (python/dbt_lakewarden): importing it registers a ``session`` submission
helper for dbt-spark Python models and makes it the default on ``method: session``. No Spark."""

from __future__ import annotations

import pkgutil
import subprocess
import sys
from types import SimpleNamespace

import pytest

from dbt.adapters.base import PythonJobHelper
from dbt.adapters.spark.connections import SparkConnectionMethod, SparkCredentials
from dbt.adapters.spark.impl import SparkAdapter


def adapter_like(method: object) -> SimpleNamespace:
    """What the adapter's properties read: ``self.config.credentials.method``."""
    return SimpleNamespace(config=SimpleNamespace(credentials=SimpleNamespace(method=method)))


def test_importing_the_module_registers_the_helper_on_a_fresh_interpreter() -> None:
    """Before the import dbt-spark has no ``session`` helper; after it, it has, and it is the default."""
    script = (
        "from types import SimpleNamespace as N\n"
        "from dbt.adapters.spark.impl import SparkAdapter as A\n"
        "fake = N(config=N(credentials=N(method='session')))\n"
        "before = sorted(A.python_submission_helpers.fget(fake)), A.default_python_submission_method.fget(fake)\n"
        "import dbt_lakewarden\n"
        "after = sorted(A.python_submission_helpers.fget(fake)), A.default_python_submission_method.fget(fake)\n"
        "print(before, after)\n"
    )
    out = subprocess.run([sys.executable, "-c", script], check=True, capture_output=True, text=True).stdout.strip()
    assert out == (
        "(['all_purpose_cluster', 'job_cluster'], 'all_purpose_cluster') "
        "(['all_purpose_cluster', 'job_cluster', 'session'], 'session')"
    )


def test_session_helper_is_registered_and_the_default_for_method_session() -> None:
    import dbt_lakewarden

    credentials = SparkCredentials.from_dict({"host": "NA", "method": "session", "schema": "lakewarden"})
    assert credentials.method == SparkConnectionMethod.SESSION
    adapter = SimpleNamespace(config=SimpleNamespace(credentials=credentials))

    helpers = SparkAdapter.python_submission_helpers.fget(adapter)
    assert helpers["session"] is dbt_lakewarden.SessionPythonJobHelper
    assert issubclass(helpers["session"], PythonJobHelper)
    # dbt-spark's own helpers are still there
    assert {"job_cluster", "all_purpose_cluster"} <= set(helpers)
    assert SparkAdapter.default_python_submission_method.fget(adapter) == "session"


def test_other_connection_methods_keep_dbt_sparks_default() -> None:
    import dbt_lakewarden  # noqa: F401

    for method in (SparkConnectionMethod.THRIFT, SparkConnectionMethod.HTTP, SparkConnectionMethod.ODBC):
        assert SparkAdapter.default_python_submission_method.fget(adapter_like(method)) == "all_purpose_cluster"


def test_install_is_idempotent() -> None:
    import dbt_lakewarden

    helpers_property = SparkAdapter.python_submission_helpers
    default_property = SparkAdapter.default_python_submission_method
    dbt_lakewarden.install()
    assert SparkAdapter.python_submission_helpers is helpers_property
    assert SparkAdapter.default_python_submission_method is default_property


def test_dbt_plugin_discovery_finds_the_module() -> None:
    """dbt imports every installed top-level ``dbt_*`` module at start-up (its plugin manager):
    that is the hook, so the module must be importable by that name from this environment."""
    from dbt.plugins.manager import PluginManager

    discovered = {name for _, name, _ in pkgutil.iter_modules() if name.startswith(PluginManager.PLUGIN_MODULE_PREFIX)}
    assert "dbt_lakewarden" in discovered


def test_the_helper_runs_compiled_code_with_spark_bound_to_the_active_session(monkeypatch) -> None:
    """submit() executes the compiled model in this process with ``spark`` bound (a stand-in
    session here, so no JVM starts)."""
    import pyspark.sql

    import dbt_lakewarden

    sentinel = object()
    monkeypatch.setattr(pyspark.sql.SparkSession, "getActiveSession", staticmethod(lambda: sentinel))
    seen: dict[str, object] = {}
    monkeypatch.setitem(sys.modules, "lakewarden_helper_probe", SimpleNamespace(seen=seen))
    helper = dbt_lakewarden.SessionPythonJobHelper({"schema": "lakewarden", "alias": "m"}, credentials=None)
    helper.submit("import lakewarden_helper_probe\nlakewarden_helper_probe.seen['spark'] = spark\n")
    assert seen["spark"] is sentinel
    assert helper.identifier == "lakewarden.m"


def test_the_shipped_profile_starts_the_jvm_as_lakewardens_own_runs_do() -> None:
    """profiles/profiles.yml's local target gives its JVM the collector and the compilers of a
    lakewarden run (spark_session.GC_OPTIONS, JIT_OPTIONS), chosen by LAKEWARDEN_JVM_JIT as the
    profile renders: quick unless ``full`` (``auto``, unset, any spelling of quick). Written out
    there (YAML and Jinja), held equal here, so a change to one is a change to both."""
    from pathlib import Path

    import jinja2
    import yaml

    from lakewarden.runtime.spark_session import GC_OPTIONS, JIT_OPTIONS

    profile = yaml.safe_load((Path(__file__).resolve().parents[2] / "profiles" / "profiles.yml").read_text())
    template = profile["lakewarden"]["outputs"]["local"]["server_side_parameters"]["spark.driver.extraJavaOptions"]

    def rendered(value: str | None) -> list[str]:
        def env_var(name: str, default: str | None = None) -> str | None:
            assert name == "LAKEWARDEN_JVM_JIT"
            return default if value is None else value

        return jinja2.Environment().from_string(template).render(env_var=env_var).split()

    quick, full = f"{GC_OPTIONS} {JIT_OPTIONS['quick']}".split(), f"{GC_OPTIONS} {JIT_OPTIONS['full']}".split()
    assert rendered("full") == rendered(" Full ") == full
    assert rendered(None) == rendered("auto") == rendered("quick") == rendered("QUICK") == quick


def test_a_bad_jvm_jit_stops_a_dbt_command_in_its_first_hook() -> None:
    """The profile cannot refuse a value, so macros/check_jvm_jit.sql does, as the first
    on-run-start hook (before any table is declared): one line naming the variable, as the
    runner's exit 2 does; auto, quick and full (any case, spaces around) pass and send nothing."""
    from pathlib import Path

    import jinja2
    import yaml

    root = Path(__file__).resolve().parents[2]
    hooks = yaml.safe_load((root / "dbt_project.yml").read_text())["on-run-start"]
    assert hooks[0] == "{{ check_jvm_jit() }}"

    class Stopped(Exception):
        pass

    def raise_compiler_error(message: str) -> None:
        raise Stopped(message)

    macros = jinja2.Environment(extensions=["jinja2.ext.do"]).from_string((root / "macros" / "check_jvm_jit.sql").read_text())

    def hook(value: str | None) -> str:
        env = {} if value is None else {"LAKEWARDEN_JVM_JIT": value}
        module = macros.make_module({
            "env_var": lambda name, default=None: env.get(name, default),
            "exceptions": type("Exceptions", (), {"raise_compiler_error": staticmethod(raise_compiler_error)}),
        })
        return str(module.check_jvm_jit()).strip()

    assert hook(None) == hook("auto") == hook(" Quick ") == hook("FULL") == ""
    with pytest.raises(Stopped, match=r"^LAKEWARDEN_JVM_JIT: 'ful' is not one of auto, quick, full$"):
        hook("ful")
