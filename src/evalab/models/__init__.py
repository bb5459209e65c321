"""Optional heavy parts behind extras: token embedders (transformers) and static tables.

Importing this package imports none of its modules; import the one you need
(:mod:`evalab.models.embedders` for :func:`~evalab.models.embedders.load_embedder`). None
imports torch at import time: they import it inside the functions that need it and raise
:class:`~evalab.errors.MissingExtraError` naming the ``semantic`` extra when it is absent.
"""
