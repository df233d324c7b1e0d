"""Run wattplan's command line from a checkout: ``python cli.py plan`` is ``wattplan plan``.

The app itself is :mod:`planner.cli` (installed as the ``wattplan`` console script); this file
keeps the product's layout, where ``cli.py`` at the top is the command line's front door, and
gives tests one name to import (``from cli import app``). A wheel does not install it.
"""

from wattplan.planner.cli import app, main

__all__ = ["app", "main"]

if __name__ == "__main__":
    main()
