"""Traces and the rounds cut from them.

- ``traces``: the Gavel and Philly trace readers, and a request's GPU count mapped to the profiled ones.
- ``cluster_spec``: ``--cluster v100:64,p100:32`` as whole nodes.
- ``builder``: the round instance of a trace's queue at a time (docs/design.md §9.4).
- ``job_list``: an operator's job list (CSV or YAML), checked field by field.
- ``cluster_file``: an operator's cluster file (YAML): hosts per GPU type, down hosts, unmanaged GPUs, the round.
- ``from_jobs``: the round instance of a job list on a cluster file (docs/design.md §9.9).
- ``next_round``: the next round's instance from this round's instance and plan (§9.9).

Imports :mod:`planner.contracts`, :mod:`planner.files`, :mod:`planner.console`, :mod:`planner.core` and
:mod:`planner.profile_library`.
"""
