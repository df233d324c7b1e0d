"""A seeded hostile-input generator for every command that reads user input (issue 22).

:mod:`tests.hostile.seeds` builds valid inputs of each kind once; :mod:`tests.hostile.mutate` bends one of them
(a JSON field, a CSV cell or row, the bytes of a file, an option's value) from an integer seed;
:mod:`tests.hostile.surfaces` says which commands read which inputs and draws a case per (surface, seed);
:mod:`tests.hostile.oracle` runs a case in-process and classifies the outcome.

What it covers: 21 surfaces (plan, validate, diff, instance check/sweep/from-trace, launch rendering, profiles
ingest of nvidia-smi logs, job sides, Zeus windows, Zeus summaries and a base library, profiles fit/check/truth,
simulate on Gavel and Philly traces with profiles, truth, carbon and price files, frontier, bench on a sweep's set).
JSON: a field deleted, null, NaN/Infinity literals, 1e308, 1e30, -1, 0, 1.5, wrong types, empty and 20,000-char
strings, rich markup, control characters, superscript digits, a repeated key, nesting up to 100,000 deep, empty
containers, truncation at a random byte, a UTF-8 BOM, invalid UTF-8, an empty file. CSV and traces: a row cut,
a column added, dropped, duplicated or reordered, an unterminated quote, a time zone added or dropped, unit
suffixes (mW, kW, dBm, MiB, %), [N/A], NaN, inf, 1e308, 400-digit numbers, negative, zero and empty cells, markup,
superscripts, blank lines, the header repeated, dropped or alone, NUL bytes, CRLF line ends. Files: missing, a
folder in place of the file. Options: NaN, inf, -inf, 0, -1, 1e308, 1e-308, 1e400, non-numbers, empty, superscripts
and 2**31 for numbers; bad list syntax (``0.1,,nan``, ``;``, brackets) for lists; markup, NUL, 5,000 chars and
path traversal for text; the output path equal to one of the inputs.

What it does not cover: one mutation per case (no combinations); ``profiles build`` (a sources folder),
``plan --from-solution`` (solver solution files) and ``--export-model``; Kubernetes and Slurm submission (only
rendering), ``--ray``; signals (SIGINT/SIGTERM), concurrent runs into one output, symlinks, permissions, files over
the size limits and very large inputs (memory, time); several nvidia-smi logs with several job sides; semantic
edits that keep a file well-formed but change its meaning in a consistent way (e.g. a plan of another instance,
an edited manifest hash), which the hand-written tests cover.
"""
