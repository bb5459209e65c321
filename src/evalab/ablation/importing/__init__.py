"""Runs made elsewhere (W&B, Hydra, a cluster's own scheduler) brought into the run store.

Owns the exported records of other tools (``sources``) and their checks and storing
(``importer``), which reads a run folder as an executed run would be read.

May import: contract, study, plan, store, execution.
"""
