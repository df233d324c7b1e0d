"""``python -m wattplan.planner.cli`` runs the command line, as the ``wattplan`` console script does."""

from wattplan.planner.cli import main

main()
