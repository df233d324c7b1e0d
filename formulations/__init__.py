"""Option enumeration, the round model written once, and the solver backends that compile it."""
