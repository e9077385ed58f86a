"""One module per job: argument parsing and orchestration (the logic is in dbt models)."""
