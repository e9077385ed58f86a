"""Branch checks: long-running validations of a commit that gate merges into protected branches.

Checks are defined, like lakeFS hooks, in ``_lakefs_actions/*.yaml`` objects at the commit being
checked; external executors (webhooks, Airflow DAGs) run them and call back with a single-use
token. See ``README.md`` in this package for the HTTP API and the configuration file.
"""
