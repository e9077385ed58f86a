"""The embedded driver's old generation is collected once Spark's dead pages pile up in it
(lakewarden.runtime.old_generation): the rule, the watch's polls against a pool that behaves as
the JVM's does, and the watch of the suite's own session."""

from __future__ import annotations

import threading

import pytest

from lakewarden.runtime import old_generation
from lakewarden.runtime.old_generation import OldGenerationWatch, should_collect, watch

MB = 1 << 20
HEAP = 4096 * MB  # the default driver heap: floor 512 MB, growth 128 MB


@pytest.mark.parametrize(
    ("used_mb", "live_mb", "collect"),
    [
        (300, 0, False),  # every run up to 1M entries: under the floor, never a collection
        (512, 0, False),  # the floor itself is not past it
        (513, 0, True),
        (600, 500, False),  # live data above the floor: not again until 128 MB more have piled up
        (629, 500, True),
        (1300, 1250, False),  # a run whose live data outgrows the floor is not collected every poll
    ],
)
def test_a_full_collection_past_the_floor_and_past_what_the_last_one_left(used_mb, live_mb, collect):
    assert should_collect(used_mb * MB, live_mb * MB, HEAP) is collect


class Usage:
    def __init__(self, used: int) -> None:
        self.used = used

    def getUsed(self) -> int:  # noqa: N802 - the JVM's MemoryUsage, through Py4J
        return self.used


class Pool:
    """The parallel collector's old generation as its MemoryPoolMXBean reports it: usage now, and
    usage after the last full collection (which only a full collection changes)."""

    def __init__(self, used_mb: int, live_mb: int) -> None:
        self.used, self.live, self.after_full = used_mb * MB, live_mb * MB, 0
        self.asked = 0  # questions about the last full collection

    def getUsage(self) -> Usage:  # noqa: N802
        return Usage(self.used)

    def getCollectionUsage(self) -> Usage:  # noqa: N802
        self.asked += 1
        return Usage(self.after_full)

    def collect(self) -> None:
        self.used = self.after_full = self.live


class System:
    def __init__(self, pool: Pool) -> None:
        self.pool, self.calls = pool, 0

    def gc(self) -> None:
        self.calls += 1
        self.pool.collect()


def test_a_poll_under_the_floor_asks_one_question_and_collects_nothing():
    pool = Pool(used_mb=300, live_mb=100)
    system = System(pool)
    assert OldGenerationWatch(pool, system, HEAP).poll() is False
    assert system.calls == 0 and pool.asked == 0


def test_a_poll_collects_dead_pages_once_and_not_live_data_again():
    pool = Pool(used_mb=900, live_mb=560)
    system = System(pool)
    polls = OldGenerationWatch(pool, system, HEAP)
    assert polls.poll() is True and system.calls == 1 and pool.used == 560 * MB
    assert polls.poll() is False  # 560 MB live: past the floor, but nothing has piled up since
    pool.used += 100 * MB
    assert polls.poll() is False
    pool.used += 40 * MB  # 140 MB beyond what the last full collection left
    pool.live = 580 * MB
    assert polls.poll() is True and system.calls == 2 and polls.collections == 2 and polls.seconds >= 0


def test_the_watch_ends_quietly_when_the_jvm_is_gone(monkeypatch):
    monkeypatch.setattr(old_generation, "POLL_SECONDS", 0.01)
    polled = threading.Event()

    class Gone:
        def getUsage(self):  # noqa: N802
            polled.set()
            raise ConnectionError("the gateway is gone")

    running = OldGenerationWatch(Gone(), None, HEAP).start()
    assert polled.wait(5)
    running._thread.join(5)  # noqa: SLF001 - the thread itself ended, nobody stopped it
    assert not running.running


@pytest.mark.spark
def test_the_embedded_session_is_watched_with_the_parallel_collector(spark):
    # a Java runtime that renamed the pool would leave the old generation unwatched: caught here
    running = watch(spark)
    assert running is not None and running.running
    assert watch(spark) is running  # one per JVM
    assert running.heap_max >= 1024 * MB
    running.poll()  # against the JVM itself: its pool answers both questions
    names = [pool.getName() for pool in spark.sparkContext._jvm.java.lang.management.ManagementFactory.getMemoryPoolMXBeans()]
    assert old_generation.POOL_NAME in names
