"""Traces and the rounds cut from them.

- ``traces``: the Gavel and Philly trace readers, and a request's GPU count mapped to the profiled ones.
- ``cluster_spec``: ``--cluster v100:64,p100:32`` as whole nodes.
- ``builder``: the round instance of a trace's queue at a time (docs/design.md §9.4).

Imports :mod:`planner.contracts`, :mod:`planner.files`, :mod:`planner.console`, :mod:`planner.core` and
:mod:`planner.profile_library`.
"""
