"""Fleet-scale benchmark: gputui against kubectl, the kubernetes client's models and a raw-HTTP floor."""
