"""``python -m evalab`` runs the CLI."""

from evalab.cli import entry

entry()
