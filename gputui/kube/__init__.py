"""Talking to the Kubernetes API: client, resource table, decoders, ingest into records, informers."""
