"""The run store: one SQLite file holding every run of every study.

Owns the database and its queries (``run_store``), who holds a run while it runs
(``leases``), a run's per-example data as stored and checked (``per_example``) and the
typed refusals of that data (``example_refusals``).

May import: contract, study, plan.
"""
