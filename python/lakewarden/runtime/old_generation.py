"""The embedded driver's old generation, collected before Spark's dead memory pages fill it.

Why: the JVM's parallel collector (``-XX:+UseParallelGC``, the embedded engine's:
lakewarden.runtime.spark_session.GC_OPTIONS) used to run a full collection of its own accord
when young collections promoted, on average, more than the old generation had free. Java 22
dropped that rule (JDK-8319713): since then a young collection that finds no room in the old
generation grows it, up to the heap's limit, and a full collection runs only there. Spark's
operators take their memory in pages (``spark.buffer.pageSize``, 1 MB with the default heap),
each a ``long[]`` on the heap; a page a task holds across young collections is promoted, and
when the task ends it is dead in the old generation until a full collection. On Java 25,
``gc committed --dry-run`` at 8.45M entries ended with 1.3 GB of old generation, most of it
dead pages, and its process peaked at 3,283 MB against 2,047 MB at 1M entries (1.60x); Java 17
ran three full collections of its own accord in the same run and peaked at 1.48x. The heap's
limit bounds the growth, but a process that grows to it whatever the work is a process whose
memory says nothing about its work.

What: a daemon thread of the driver's Python process reads the old generation's occupancy
(the JVM's ``MemoryPoolMXBean``, one Py4J call of well under a millisecond) every
:data:`POLL_SECONDS`, and asks for a full collection (``System.gc()``) when the old generation
holds more than :data:`FLOOR_SHARE` of the heap and has grown by :data:`GROWTH_SHARE` of it
since the last full collection (:func:`should_collect`; the JVM keeps what that one left,
whoever started it). A full collection of the parallel collector costs its live data: 0.20-0.28 s
at 8.45M entries, four of them in a 62 s run, whose old generation then grew to 762 MB at
most (against 1,318 MB) and whose process peaked at 2,740 MB (against 3,283 MB). Runs that never
promote that much (every run up to 1M entries: their old generation stays under 260 MB) never
pay one. Results cannot change: a collection frees only what nothing references.

Only the embedded engine's JVM, and only with the parallel collector (whose old generation
pool is "PS Old Gen"): a driver under ``spark-submit`` is the cluster's, and a JVM started with
another collector (``LAKEWARDEN_SPARK_CONF`` may choose one) keeps its own rules. One watch per
process and JVM; it ends quietly when a call fails (the gateway gone at exit).
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import SparkSession

log = logging.getLogger(__name__)

#: the parallel collector's old generation, as the JVM's memory pool beans name it
POOL_NAME = "PS Old Gen"
#: how often the watch reads the old generation's occupancy
POLL_SECONDS = 0.25
#: a full collection is asked for when the old generation holds more than this share of the heap
#: (512 MB of the default 4 GB; every run up to 1M entries stays under it) ...
FLOOR_SHARE = 1 / 8
#: ... and more than this share of it (128 MB) beyond what the last full collection left
GROWTH_SHARE = 1 / 32


def should_collect(used: int, live_after_last_full: int, heap_max: int) -> bool:
    """Whether an old generation holding ``used`` bytes, of which the last full collection left
    ``live_after_last_full`` (0 before any), should be collected now: past :data:`FLOOR_SHARE` of
    ``heap_max``, and past :data:`GROWTH_SHARE` of it beyond what survived, so that a run whose
    live data is above the floor (a large aggregation's hash maps while its tasks run) is
    collected again only once that much more has piled up, not on every poll.

    Why a floor and not a margin over what survived alone: the old generation's size is what the
    process keeps (its pages stay resident once touched), and what survives a collection depends
    on when it runs: in one 8.45M-entry run a collection in the middle of the mark left 771 MB,
    and with a margin of 256 MB over that the old generation grew to 1,023 MB (peak 3,006 MB);
    with a margin of 512 MB, 1,086 MB (3,075 MB)."""
    return used > heap_max * FLOOR_SHARE and used - live_after_last_full > heap_max * GROWTH_SHARE


@dataclass
class OldGenerationWatch:
    """A running watch (:func:`watch`): ``collections`` it asked for so far, and their seconds."""

    pool: Any
    system: Any
    heap_max: int
    collections: int = 0
    seconds: float = 0.0

    def __post_init__(self) -> None:
        # lives as long as its JVM (a session stopped and made again keeps it: :func:`watch`)
        self._thread = threading.Thread(target=self._run, name="lakewarden-old-generation", daemon=True)

    def start(self) -> "OldGenerationWatch":
        self._thread.start()
        return self

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

    def poll(self) -> bool:
        """One look at the old generation; collect it if :func:`should_collect`. Whether it did."""
        used = int(self.pool.getUsage().getUsed())
        if used <= self.heap_max * FLOOR_SHARE:
            return False  # nearly every poll of nearly every run: one Py4J question, not two
        live = int(self.pool.getCollectionUsage().getUsed())
        if not should_collect(used, live, self.heap_max):
            return False
        started = time.monotonic()
        self.system.gc()
        elapsed = time.monotonic() - started
        self.collections += 1
        self.seconds += elapsed
        log.debug(
            "old generation %d MB (%d MB live after the last full collection): full collection, %.2f s, %d MB after",
            used >> 20, live >> 20, elapsed, int(self.pool.getUsage().getUsed()) >> 20,
        )
        return True

    def _run(self) -> None:
        while True:
            time.sleep(POLL_SECONDS)
            try:
                self.poll()
            except Exception:  # noqa: BLE001 - the gateway gone (the process ending): nothing left to watch
                log.debug("old generation watch ended", exc_info=True)
                return


_lock = threading.Lock()
_watches: dict[int, OldGenerationWatch] = {}


def collections_asked(spark: "SparkSession") -> int | None:
    """How many full collections the watch of ``spark``'s JVM has asked for so far (None: no
    watch). A run reports the difference over its mark (the summary's ``full_collections``)."""
    running = _watches.get(id(spark.sparkContext._gateway))
    return None if running is None else running.collections


def watch(spark: "SparkSession") -> OldGenerationWatch | None:
    """Start (or return) the watch of ``spark``'s driver JVM; None when its collector is not the
    parallel one. One per JVM: a session stopped and made again in the same JVM (the test
    suite's) keeps the watch it had."""
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    gateway = id(spark.sparkContext._gateway)
    with _lock:
        running = _watches.get(gateway)
        if running is not None and running.running:
            return running
        pools = [pool for pool in jvm.java.lang.management.ManagementFactory.getMemoryPoolMXBeans() if pool.getName() == POOL_NAME]
        if not pools:
            return None
        heap_max = int(jvm.java.lang.Runtime.getRuntime().maxMemory())
        started = OldGenerationWatch(pools[0], jvm.java.lang.System, heap_max).start()
        _watches[gateway] = started
        return started
