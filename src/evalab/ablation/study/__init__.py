"""The study file: what a study declares, read and checked before anything runs.

Owns the frozen ``Study`` (``spec``) and its reading (``load``, one module per group of
sections: ``metric_keys``, ``variants``, ``command``, ``versions``, ``entry``, with
``where`` for the errors that name a key's line), the ``--set`` row (``overrides``), the
rows of ``[variants]`` and ``[grid]`` (``grid``), ``[display]`` (``display``) and declared
bounds (``bounds``).

May import: contract.
"""
