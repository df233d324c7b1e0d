"""The vocabulary and the file contracts: the types every layer speaks and the JSON forms people share.

- ``problems``: :class:`~planner.contracts.problems.Problem` and ``InputError``, every error naming its field.
- ``defaults``: round, cluster and solve defaults, one value each.
- ``domain``: the instance types (GPU types, jobs, profiles, pairs, the round spec).
- ``rules``: the round's rules (objective, delta, restart, minimum pair rate, duration) in one type.
- ``request``: :class:`~planner.contracts.request.PlanRequest`, every solve option.
- ``solve_report``: what a solve records (stages, heuristics, bounds, notes).
- ``plan``: the plan type and its ``wattplan.plan/1`` file.
- ``instance_io``, ``instance_checks``: the ``wattplan.instance/1`` file and its checks.
- ``profile_checks``: the checks of a ``wattplan.profiles/1`` library (also of an instance's profiles).
- ``floor``: the energy floor's answer (the least energy any schedule of a workload needs).
- ``jsonio``, ``schema_check``: strict JSON reading, atomic writing and the JSON schemas.
- ``figures``: the figure options every plotting command takes (formats, dpi range) and their check.
- ``provenance``: the ``written_by`` record (command line, version) of the JSON files wattplan writes.
- ``options``, ``option_files``: a face's options declared once (unit, range, help, flag) and read from a TOML file.
- ``lifetime``: a helper process dies with its parent (the parent-death signal, the race check, a watching thread).

Imports nothing else of wattplan.
"""
