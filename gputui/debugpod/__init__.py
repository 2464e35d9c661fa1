"""Debug pod on a GPU node: the nvidia-smi script, its log protocol, the parser and health flags."""
