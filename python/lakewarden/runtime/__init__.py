"""Where and how a run executes: the state directory, the Spark session and its JVM, the dbt
project and the runner that executes its compiled models, progress lines.

:mod:`~lakewarden.runtime.state_dir` (which directory a run keeps its state in),
:mod:`~lakewarden.runtime.spark_session` (the embedded session, or spark-submit's) with
:mod:`~lakewarden.runtime.jvm_classes` (the JVM's class archive),
:mod:`~lakewarden.runtime.project` (the dbt project, compiled once and cached) with
:mod:`~lakewarden.runtime.compiled_models` (its nodes executed on this session) and
:mod:`~lakewarden.runtime.dbt_python` (the bodies of the dbt Python models),
:mod:`~lakewarden.runtime.user_cache` and :mod:`~lakewarden.runtime.progress`.
"""
