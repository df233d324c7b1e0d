"""A seeded hostile-input generator for every command that reads user input (issue 22).

:mod:`tests.hostile.seeds` builds valid inputs of each kind once; :mod:`tests.hostile.mutate` bends one of them
(a JSON field, a CSV cell or row, the bytes of a file, an option's value) from an integer seed;
:mod:`tests.hostile.surfaces` says which commands read which inputs and draws a case per (surface, seed);
:mod:`tests.hostile.oracle` runs a case in-process and classifies the outcome.
"""
