"""The study file: what a study declares, read and checked before anything runs.

Owns the key table (``keys``), the frozen ``Study`` (``spec``) and its reading
(``load``, one module per group of sections: ``metric_keys``, ``variants``, ``command``,
``versions``, ``entry``, with ``where`` for the errors that name a key's line), the
``--set`` row (``overrides``), the rows of ``[variants]`` and ``[grid]`` (``grid``),
``[display]``, command templates (``template``, with ``shellsyntax``: where each placeholder
stands as the shell reads it), computed metrics ``[metrics.NAME]``
(``computed``), the ``[curves]`` settings and the curves a run logs (``curves``), declared
bounds (``bounds``) and the code version a run executes (``codeversion``).

May import: nothing else of ``evalab.ablation`` (the study file comes first).
"""
