"""The profile library (``wattplan.profiles/1``): what planning reads about job types and GPU types.

- ``library``: the library type, its loader and the shipped library's path.
- ``build``: the shipped V100/P100 library built from Gavel throughputs and Zeus power (docs/design.md §9.1).
- ``mapping``: how Gavel's and Zeus's names and units map onto the library's.
- ``priors``: GPU types without measurements scaled from the V100 by public specs, and the rule's error (§9.8).
- ``listing``: what a library holds, as the tables of ``profiles ls`` and ``profiles show``.
- ``index``: a library indexed by key once (profiles, pair rates both ways, GPU types), for the truth model
  and the agent's progress estimate.

Measuring and fitting new entries is :mod:`planner.profiling`'s job. Imports :mod:`planner.contracts`,
:mod:`planner.files` and :mod:`planner.core`.
"""
