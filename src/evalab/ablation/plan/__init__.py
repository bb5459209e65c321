"""Planning: from a study to its rows and runs, and the typed values a run travels as.

Owns the rows and runs of a study with their keys (``runs``: base + variants + grid cells
x seeds, eval rows on their trained runs) and a run's values on its way from the planner
to the store (``jobs``: ``Job``, ``AttemptResult``, ``Artifacts``).

May import: contract, study.
"""
