"""``python -m wattplan`` runs the command line (:mod:`planner.cli`, installed as ``wattplan.planner.cli``)."""

from wattplan.planner.cli import main

main()
