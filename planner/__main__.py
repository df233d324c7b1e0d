"""``python -m planner`` runs the command line (:mod:`planner.cli`)."""

from planner.cli import main

main()
