"""Where files are and how the large ones are read.

- ``resources``: the shipped data (profile library, traces, signals, the default round).
- ``paths``: output paths that must not overwrite an input.
- ``csv_frames``: the strict pandas reader of Philly traces, signal files and CSV job lists.
- ``safe_yaml``: the strict YAML reader of job lists and cluster files (no alias bomb, duplicate key, YAML 1.1 typing).
- ``digests``: the SHA-256 of a file, the one file hash of the project.

Imports :mod:`planner.contracts` only.
"""
