"""Data sources: each reads one system (Kubernetes, AWS, Prometheus) and reports its own status."""
