"""``python -m wattplan.planner`` runs the command line (:mod:`planner.cli`)."""

from wattplan.planner.cli import main

main()
