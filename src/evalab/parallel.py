"""Moved to :mod:`evalab.metrics.parallel` (the metrics layer); this name keeps old imports working."""

from evalab.metrics.parallel import parallel_stats, shard_bounds, stats_table

__all__ = ["parallel_stats", "shard_bounds", "stats_table"]
