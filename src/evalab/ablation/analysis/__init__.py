"""Analysis: a study's stored runs into typed statistics, findings and notes.

Owns ``analyze`` (``analyze``, which only assembles), the typed values it returns
(``study_analysis``), the stored runs as the analysis reads them (``study_runs``), one
metric over seeds and its Δ (``seed_deltas``), a row's statistics (``row_stats``), the
test-set intervals (``example_intervals``), completing a metric's statistics (``finish``),
the grid's effects (``grid_effects``), the findings (``findings``), the notes (their kinds
in ``note_kinds``, which ones a study states in ``study_notes``) and the learning curves
banded per row (``curve_bands``).

May import: contract, study, plan, store.
"""
