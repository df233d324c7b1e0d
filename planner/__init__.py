"""wattplan's domain: instances, plans, validation, placement and everything without a solver."""
