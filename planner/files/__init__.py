"""Where files are and how the large ones are read.

- ``resources``: the shipped data (profile library, traces, signals, the default round).
- ``paths``: output paths that must not overwrite an input.
- ``csv_frames``: the strict pandas reader of Philly traces and signal files.

Imports :mod:`planner.contracts` only.
"""
