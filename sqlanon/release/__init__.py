"""Consumers of a published release: apply to new data, regions, metrics, imprecision, query
rewriting and the report. Each reloads the release from its manifest."""
