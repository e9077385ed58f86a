"""Which Java runtime the embedded Spark starts on: the one named, else the fastest supported one
found on the machine.

Why choose at all: Spark 4 runs on Java 17, 21 and 25, and the newer runtimes run lakewarden's
work for less. Measured on the 2-core machine, one warm session running a lifecycle, a
committed and an uncommitted dry run on the 600-entry sample eight times over: 175 and 158
machine CPU seconds on Java 25.0.3 against 199 and 185 on Java 17.0.15 (the eighth round 11-13
CPU seconds against 15-17); the JVM's own work (the SQL analyzer, planning, serialization) is
most of a run, and a newer JIT compiles it better. Spark's launcher takes ``$JAVA_HOME/bin/java``,
else the ``java`` on PATH, which on most Linux machines is the oldest installed.

The rule (:func:`choose_java`), first match wins:

1. ``LAKEWARDEN_JAVA_HOME``: lakewarden's own choice, for this tool only;
2. ``JAVA_HOME``: the user's choice, as every Java tool takes it;
3. the newest *supported* runtime among the ``java`` on PATH and the runtimes under
   ``/usr/lib/jvm`` (where Debian, Ubuntu and Temurin's packages put them).

Supported: Java 17, 21, and 25 from 25.0.3 on. Java 25.0.0 to 25.0.2 have a G1 collector bug
that can corrupt data (JDK-8377811, "Optional Evacuations may evacuate pinned objects"; Spark's
documentation deprecates them for it): a corrupted address could be deleted, so lakewarden
refuses them however they are named (exit 2, naming the variable). Other versions named
explicitly are taken as they are (Spark says whether it runs on them); found ones are passed
over. Nothing found: nothing is changed, and Spark's launcher looks for ``java`` as it always
does.

The choice is made where a JVM starts (``spark_session.get_or_create``, and so every job and
``warm-up``): it sets ``JAVA_HOME`` for that process and what it starts (Spark's launcher, a
cluster's scripts). An engine and the command handing it a run compare the choice, not the raw
variable (``engine.protocol.engine_settings``). ``dbt`` run by hand starts Spark itself, on
``JAVA_HOME`` or PATH: ``export JAVA_HOME=$(python -m lakewarden.runtime.java_runtime)`` gives
it the same runtime.
Under ``spark-submit`` the driver's JVM is the cluster's, and none of this applies.
"""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

#: where Linux packages install Java runtimes (Debian's, Ubuntu's, Temurin's and Zulu's)
SYSTEM_JVM_DIR = Path("/usr/lib/jvm")
#: the feature releases Spark 4 supports, newest first: the first found wins
SUPPORTED_FEATURES = (25, 21, 17)
#: the first update of a feature release lakewarden runs on (JDK-8377811 in 25.0.0-25.0.2)
MINIMUM_UPDATE = {25: 3}

_VERSION = re.compile(r'^JAVA_VERSION="?(\d+)(?:\.(\d+))?(?:\.(\d+))?', re.MULTILINE)


@dataclass(frozen=True)
class JavaRuntime:
    """A Java runtime: its home (``bin/java`` under it), version and how it was chosen."""

    home: Path
    #: (feature, interim, update), from the home's ``release`` file; None when it has none
    version: tuple[int, int, int] | None
    #: ``LAKEWARDEN_JAVA_HOME``, ``JAVA_HOME`` or ``found``
    source: str

    @property
    def version_text(self) -> str:
        return ".".join(map(str, self.version)) if self.version else "unknown version"


def describe_choice(runtime: "JavaRuntime | None") -> str:
    """One line naming the runtime every JVM of a run takes, as logs print it (pytest's header,
    each benchmark's first lines): figures measured on one runtime do not hold for another."""
    if runtime is None:
        return "java: none chosen (Spark's launcher takes the java on PATH)"
    return f"java: {runtime.home} ({runtime.version_text}, {runtime.source})"


def read_version(home: Path) -> tuple[int, int, int] | None:
    """The runtime's version from its ``release`` file (every JDK and JRE image since Java 9 has
    one): no JVM started to ask it."""
    try:
        text = (home / "release").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    match = _VERSION.search(text)
    if match is None:
        return None
    feature, interim, update = (int(part) if part else 0 for part in match.groups())
    return feature, interim, update


def unsafe_reason(version: tuple[int, int, int] | None) -> str | None:
    """Why lakewarden refuses to run on ``version``, or None."""
    if version is None:
        return None
    feature, _, update = version
    minimum = MINIMUM_UPDATE.get(feature)
    if minimum is not None and update < minimum:
        return (
            f"Java {'.'.join(map(str, version))} has a G1 garbage collector bug that can corrupt data "
            f"(JDK-8377811); use {feature}.0.{minimum} or later, or Java 17 or 21"
        )
    return None


def is_supported(version: tuple[int, int, int] | None) -> bool:
    return version is not None and version[0] in SUPPORTED_FEATURES and unsafe_reason(version) is None


def _home_of(java: Path) -> Path:
    """``<home>/bin/java`` → ``<home>``, through symlinks (``/usr/bin/java`` → alternatives → home)."""
    return java.resolve().parent.parent


def found_runtimes(environ: Mapping[str, str] | None = None, system_dir: Path = SYSTEM_JVM_DIR) -> list[Path]:
    """The runtime homes on this machine: the ``java`` on PATH first, then ``system_dir``'s."""
    environ = os.environ if environ is None else environ
    homes: list[Path] = []
    on_path = shutil.which("java", path=environ.get("PATH"))
    if on_path:
        homes.append(_home_of(Path(on_path)))
    if system_dir.is_dir():
        for entry in sorted(system_dir.iterdir()):
            if (entry / "bin" / "java").is_file():
                home = entry.resolve()
                if home not in homes:
                    homes.append(home)
    return homes


def choose_java(environ: Mapping[str, str] | None = None, system_dir: Path = SYSTEM_JVM_DIR) -> JavaRuntime | None:
    """The runtime the embedded Spark starts on (the module's rule), or None when none is named
    and none supported is found. Raises :class:`lakewarden.errors.BadInput` for a named one that
    is missing or refused."""
    from lakewarden.errors import BadInput

    environ = os.environ if environ is None else environ
    for variable in ("LAKEWARDEN_JAVA_HOME", "JAVA_HOME"):
        named = environ.get(variable, "").strip()
        if not named:
            continue
        home = Path(named)
        if not (home / "bin" / "java").is_file():
            raise BadInput(f"no bin/java under {named}", field=variable)
        version = read_version(home)
        reason = unsafe_reason(version)
        if reason:
            raise BadInput(reason, field=variable)
        return JavaRuntime(home=home, version=version, source=variable)
    best: JavaRuntime | None = None
    for home in found_runtimes(environ, system_dir):
        version = read_version(home)
        if not is_supported(version):
            continue
        assert version is not None
        if best is None or (best.version is not None and version > best.version):
            best = JavaRuntime(home=home, version=version, source="found")
    return best


def java_home_setting(environ: Mapping[str, str] | None = None) -> str | None:
    """The ``JAVA_HOME`` a JVM started by this process would get (for comparing an engine's
    settings with a command's): the chosen home, None when none, ``error: ...`` when refused."""
    from lakewarden.errors import BadInput

    try:
        chosen = choose_java(environ)
    except BadInput as exc:
        return f"error: {exc}"
    return str(chosen.home) if chosen else None


def use_java() -> JavaRuntime | None:
    """Choose the runtime and set ``JAVA_HOME`` to it for this process and what it starts (Spark's
    launcher reads it), before the first JVM starts. Idempotent. Raises
    :class:`lakewarden.errors.BadInput` for a named runtime that is missing or refused."""
    chosen = choose_java()
    if chosen is not None:
        os.environ["JAVA_HOME"] = str(chosen.home)
    return chosen


if __name__ == "__main__":  # pragma: no cover - `JAVA_HOME=$(python -m lakewarden.runtime.java_runtime)`
    import sys

    from lakewarden.errors import BadInput

    try:
        runtime = choose_java()
    except BadInput as exc:
        print(f"lakewarden: {exc}", file=sys.stderr)
        sys.exit(2)
    if runtime is None:
        print("lakewarden: no supported Java runtime found (Java 17, 21 or 25.0.3+)", file=sys.stderr)
        sys.exit(1)
    print(runtime.home)
