"""The corpus files are kernels for mypy to read, not modules for pytest to import."""

collect_ignore_glob = ["corpus/*.py"]
