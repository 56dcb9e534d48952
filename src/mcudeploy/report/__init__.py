"""Reports: model analysis records and their renderings (terminal table, JSON, CSV)."""
