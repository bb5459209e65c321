"""Execution: running a study's planned runs and saying what a run would do or has done.

Owns one attempt of a run in a fresh process (``attempt``, with ``_worker`` and ``_guard``
as the processes it starts), the local pool and ``run_study`` (``executors``), Ray tasks
(``ray_executor``, ``transfer``), the progress display of a study's runs
(``study_progress``), and ``status``, ``dry_run`` and ``gc`` (``status``).

May import: contract, study, plan, store.
"""
