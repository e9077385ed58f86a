"""The engine: one warm Spark driver that ``lakewarden`` commands hand their runs to.

Why: a job run as a command starts a Python interpreter, imports dbt and pyspark, boots a JVM
and plans every query on a cold JVM whose code is still interpreted. That costs the same on
every run whatever it reads, and it is most of what an incremental or a no-op run pays: a
lifecycle run at 1M entries after +1 % commits took 15.3 s as a command (12.0 s for a run that
reads nothing), and 5.4 s (3.4 s) as a call in a process that had run a job before. An
operator running jobs often (every hour, or after every merge) keeps an engine and pays the
start once.

How (opt-in): ``lakewarden engine start`` starts the engine in the background, on a Unix
socket only its user can open; a command run with ``LAKEWARDEN_ENGINE`` naming that socket
sends its arguments, working directory and environment there, prints what the run prints and
exits with its status, exactly as if it had run itself. Only the Spark jobs go there
(:data:`~lakewarden.engine.protocol.FORWARDED`); every other command runs in its own process.
A command whose engine is not there, or whose engine runs other code or other engine settings
(:func:`~lakewarden.engine.protocol.engine_settings`), says so in one line and runs in its own
process: the engine changes how fast a run is, never what it does.

* :mod:`lakewarden.engine.protocol`: the frames on the socket, and what must agree between a
  command and the engine it uses.
* :mod:`lakewarden.engine.server`: the engine's loop (one run at a time).
* :mod:`lakewarden.engine.client`: a command's side.
* :mod:`lakewarden.engine.cli`: ``lakewarden engine start|serve|stop|status``.
"""
