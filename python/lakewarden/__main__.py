"""``python -m lakewarden COMMAND ...``, and the ``.py`` entry point ``spark-submit`` needs.

spark-submit runs a Python application only from a ``.py`` file (any other primary resource is
taken for a JAR), so on a cluster the runner is started as::

    spark-submit --master spark://host:7077 python/lakewarden/__main__.py gc committed ...

with the same commands and options as the ``lakewarden`` executable (see README, "cluster").
"""

from __future__ import annotations

import os
import sys

if not __package__:
    # Run as a file: Python put this file's directory first on sys.path, which would make
    # lakewarden's own modules (report, sample, errors, ...) importable as top-level names and
    # shadow anything of the same name. Import the package from its parent directory instead.
    _here = os.path.dirname(os.path.abspath(__file__))
    if sys.path and os.path.abspath(sys.path[0] or os.curdir) == _here:
        del sys.path[0]
    _parent = os.path.dirname(_here)
    if _parent not in sys.path:
        sys.path.insert(0, _parent)

from lakewarden.cli import main  # noqa: E402 - after the sys.path fix above

if __name__ == "__main__":
    sys.exit(main())
