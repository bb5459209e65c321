"""The contract between a study and its runs: what a run is given and what it gives back.

Owns the study file's key table (``keys``: every key, its type, default and help), how a
command-template run is launched (``template``, with ``shellsyntax``: where each
placeholder stands as the shell reads it), the code a run executes (``codeversion``), the
metrics evalab computes from a run's output files (``computed``: ``[metrics.NAME]``) and
the values a run logs per step (``curves``: ``[curves]``, ``log()``, their storage).

May import: nothing else of ``evalab.ablation`` (every stage builds on it).
"""
