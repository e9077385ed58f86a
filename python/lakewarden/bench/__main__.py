"""``python -m lakewarden.bench SUBCOMMAND [options]``: run one benchmark.

Each subcommand hands the rest of the command line to its module's ``main(argv)``, imported
only when chosen (so one benchmark's missing optional dependency does not break the others).
``python -m lakewarden.bench SUBCOMMAND --help`` shows that benchmark's options.
"""

from __future__ import annotations

import importlib
import sys
from typing import Sequence

# subcommand -> (module, one-line description), in the order --help lists them
BENCHMARKS: dict[str, tuple[str, str]] = {
    "committed-gc": ("lakewarden.bench.committed_gc", "committed GC mark vs. one scan of the unique ranges"),
    "lifecycle": ("lakewarden.bench.lifecycle", "lifecycle full run, then an incremental run after +1% commits"),
    "uncommitted-gc": ("lakewarden.bench.uncommitted_gc", "uncommitted GC clean and optimized runs"),
    "sstable-read": ("lakewarden.bench.sstable_read", "SSTable decoding throughput"),
}
PROG = "python -m lakewarden.bench"


def usage() -> str:
    width = max(map(len, BENCHMARKS))
    lines = [f"usage: {PROG} {{{','.join(BENCHMARKS)}}} [options]", "", "Benchmarks (they print figures; not tests):"]
    lines += [f"  {name:<{width}}  {text}" for name, (_, text) in BENCHMARKS.items()]
    lines += ["", f"'{PROG} BENCHMARK --help' lists a benchmark's options."]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help"):
        print(usage(), file=sys.stdout if args else sys.stderr)
        return 0 if args else 2
    name, rest = args[0], args[1:]
    if name not in BENCHMARKS:
        print(f"{PROG}: unknown benchmark {name!r}\n\n{usage()}", file=sys.stderr)
        return 2
    module_name = BENCHMARKS[name][0]
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name != module_name:
            raise  # the benchmark exists but one of its own imports is missing: show it
        print(f"{PROG}: benchmark {name!r} is not available (no module {module_name})", file=sys.stderr)
        return 2
    return int(module.main(rest) or 0)


if __name__ == "__main__":
    raise SystemExit(main())
