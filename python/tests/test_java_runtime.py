"""Which Java runtime the embedded Spark starts on (lakewarden.runtime.java_runtime): fake runtime
homes (a ``release`` file and an executable ``bin/java``), no JVM started."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from lakewarden.engine.protocol import engine_settings
from lakewarden.errors import BadInput
from lakewarden.runtime.java_runtime import choose_java, describe_choice, read_version, unsafe_reason


def fake_home(root: Path, name: str, version: str | None) -> Path:
    home = root / name
    (home / "bin").mkdir(parents=True)
    java = home / "bin" / "java"
    java.write_text("#!/bin/sh\nexit 0\n")
    java.chmod(0o755)
    if version is not None:
        (home / "release").write_text(f'IMPLEMENTOR="test"\nJAVA_VERSION="{version}"\nMODULES="java.base"\n')
    return home


def test_versions_are_read_from_the_release_file(tmp_path: Path) -> None:
    assert read_version(fake_home(tmp_path, "a", "25.0.3")) == (25, 0, 3)
    assert read_version(fake_home(tmp_path, "b", "21")) == (21, 0, 0)
    assert read_version(fake_home(tmp_path, "c", "17.0.15")) == (17, 0, 15)
    assert read_version(fake_home(tmp_path, "d", None)) is None


def test_the_newest_supported_runtime_found_is_chosen_and_unsafe_or_unsupported_ones_are_passed_over(tmp_path: Path) -> None:
    jvms = tmp_path / "jvm"
    fake_home(jvms, "java-17", "17.0.15")
    fake_home(jvms, "java-21", "21.0.4")
    fake_home(jvms, "temurin-25.0.2", "25.0.2")  # JDK-8377811: never chosen
    fake_home(jvms, "java-26", "26")  # not one Spark 4 supports
    fake_home(jvms, "no-release", None)
    chosen = choose_java({"PATH": ""}, system_dir=jvms)
    assert chosen is not None and chosen.home.name == "java-21" and chosen.source == "found"
    fake_home(jvms, "temurin-25", "25.0.3")
    chosen = choose_java({"PATH": ""}, system_dir=jvms)
    assert chosen is not None and chosen.home.name == "temurin-25" and chosen.version == (25, 0, 3)


def test_the_java_on_path_counts_as_found_and_nothing_found_changes_nothing(tmp_path: Path) -> None:
    on_path = fake_home(tmp_path, "path-java", "17.0.9")
    chosen = choose_java({"PATH": str(on_path / "bin")}, system_dir=tmp_path / "none")
    assert chosen is not None and chosen.home == on_path.resolve() and chosen.version == (17, 0, 9)
    assert choose_java({"PATH": str(tmp_path / "empty")}, system_dir=tmp_path / "none") is None
    # the line logs print (pytest's header, each benchmark's first): home, version, how chosen
    assert describe_choice(chosen) == f"java: {on_path.resolve()} (17.0.9, found)"
    assert describe_choice(None) == "java: none chosen (Spark's launcher takes the java on PATH)"


def test_a_named_runtime_wins_and_a_bad_one_is_bad_input_naming_the_variable(tmp_path: Path) -> None:
    jvms = tmp_path / "jvm"
    newest = fake_home(jvms, "temurin-25", "25.0.3")
    older = fake_home(tmp_path, "mine", "17.0.1")
    named = choose_java({"PATH": "", "JAVA_HOME": str(older)}, system_dir=jvms)
    assert named is not None and named.home == older and named.source == "JAVA_HOME"
    own = choose_java({"PATH": "", "JAVA_HOME": str(older), "LAKEWARDEN_JAVA_HOME": str(newest)}, system_dir=jvms)
    assert own is not None and own.home == newest and own.source == "LAKEWARDEN_JAVA_HOME"
    # a version Spark may not support, named: taken as it is (Spark says whether it runs)
    odd = fake_home(tmp_path, "odd", "26")
    assert choose_java({"JAVA_HOME": str(odd)}, system_dir=jvms).home == odd  # type: ignore[union-attr]
    with pytest.raises(BadInput, match=r"^LAKEWARDEN_JAVA_HOME: no bin/java under"):
        choose_java({"LAKEWARDEN_JAVA_HOME": str(tmp_path / "missing")}, system_dir=jvms)
    broken = fake_home(tmp_path, "broken", "25.0.1")
    with pytest.raises(BadInput, match=r"^JAVA_HOME: Java 25\.0\.1 has a G1 garbage collector bug .*JDK-8377811"):
        choose_java({"JAVA_HOME": str(broken)}, system_dir=jvms)


def test_only_25_before_25_0_3_is_refused() -> None:
    assert unsafe_reason((25, 0, 2)) is not None and unsafe_reason((25, 0, 0)) is not None
    assert unsafe_reason((25, 0, 3)) is None and unsafe_reason((17, 0, 1)) is None and unsafe_reason((21, 0, 0)) is None
    assert unsafe_reason(None) is None


def test_an_engine_and_a_command_compare_the_chosen_runtime_not_the_raw_variable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A command that hands its run to an engine has started no JVM and has no JAVA_HOME of its
    own; the engine set its JAVA_HOME to its choice when its session started. Both settings name
    the same runtime."""
    monkeypatch.delenv("LAKEWARDEN_JAVA_HOME", raising=False)
    monkeypatch.delenv("JAVA_HOME", raising=False)
    command = engine_settings()["JAVA_HOME"]
    if command is None:
        pytest.skip("no supported Java runtime on this machine")
    monkeypatch.setenv("JAVA_HOME", command)  # what use_java does in the engine's process
    assert engine_settings()["JAVA_HOME"] == command


def test_the_module_prints_the_chosen_home_for_dbt_run_by_hand(tmp_path: Path) -> None:
    home = fake_home(tmp_path, "mine", "21.0.2")
    result = subprocess.run(
        [sys.executable, "-m", "lakewarden.runtime.java_runtime"], env={"JAVA_HOME": str(home), "PATH": ""},
        capture_output=True, text=True, check=False,
    )
    assert (result.returncode, result.stdout.strip()) == (0, str(home)), result.stderr
    broken = fake_home(tmp_path, "broken", "25.0.0")
    result = subprocess.run(
        [sys.executable, "-m", "lakewarden.runtime.java_runtime"], env={"JAVA_HOME": str(broken), "PATH": ""},
        capture_output=True, text=True, check=False,
    )
    assert result.returncode == 2 and result.stderr.startswith("lakewarden: JAVA_HOME: Java 25.0.0"), result.stderr
