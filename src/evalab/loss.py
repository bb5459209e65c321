"""Former name of :mod:`evalab.nll` (negative log-likelihood from logits), kept so that
``import evalab.loss`` goes on working; new code imports :mod:`evalab.nll`, whose name
says what it is beside :mod:`evalab.metrics.loss` (the corpus metrics built on it)."""

from evalab.nll import *  # noqa: F403
from evalab.nll import __all__  # noqa: F401
