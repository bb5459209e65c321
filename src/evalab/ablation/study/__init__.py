"""The study file: what a study declares, read and checked before anything runs.

Owns the key table (``keys``), the TOML parsing into a frozen ``Study`` (``spec`` and the
modules it is split into), the rows of ``[variants]`` and ``[grid]`` (``grid``),
``[display]``, command templates (``template``), computed metrics ``[metrics.NAME]``
(``computed``), the ``[curves]`` settings and the curves a run logs (``curves``), declared
bounds (``bounds``) and the code version a run executes (``codeversion``).

May import: nothing else of ``evalab.ablation`` (the study file comes first).
"""
