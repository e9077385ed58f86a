"""What a run leaves for people: its report directory and how it is read.

:mod:`~lakewarden.reports.directory` writes the directory (``summary.json``, ``addresses.csv``)
and owns its file names; :mod:`~lakewarden.reports.figures` computes the page's numbers in the
mark's Spark session; :mod:`~lakewarden.reports.page` draws ``report.html`` from them (no Spark);
:mod:`~lakewarden.reports.explain` answers ``lakewarden explain`` from the directory alone;
:mod:`~lakewarden.reports.history` keeps the state dir's run history (the page's trend).
"""
