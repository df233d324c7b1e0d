"""What the command line reads and prints, without math.

- ``list_options``: the parser of list options (``--cluster v100:64,p100:32``, ``--deltas 0.1,0.2``).
- ``solver_list``: ``--solvers`` with commas inside quoted ``cmd:"..."`` commands kept whole.
- ``terminal``: user text made safe to print through rich.
- ``tables``: rich tables of plans, solve stages and problems.
- ``formats``: ``--format table|json|csv``: an answer as named sections of rows, printed as JSON or CSV.
- ``bars``: the progress bar of a command that counts finished items, with the time left.

Imports :mod:`planner.contracts` only.
"""
