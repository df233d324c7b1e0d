r"""A seeded hostile-input generator for every command that reads user input (issues 22 and 41).

:mod:`tests.hostile.seeds` builds valid inputs of each kind once; :mod:`tests.hostile.mutate` bends one of them
(a JSON field, a YAML scalar, key or structure, a CSV cell, row or column, a Slurm or Prometheus answer, the bytes
of a file, an option's value) from an integer seed; :mod:`tests.hostile.surfaces` says which commands read which
inputs and draws a case per (surface, seed); :mod:`tests.hostile.inprocess` adds the surfaces that are no command
(the agent's readers and one agent round, the Python API); :mod:`tests.hostile.oracle` runs a case in-process
and classifies the outcome.

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

Issue 41 adds 16 surfaces, each drawable at 300 cases and more (``benchmarks/hostile_audit.py --new``):
``from-jobs yaml``, ``from-jobs csv`` and ``cluster file`` (``instance from-jobs``), ``plan jobs`` (``plan JOBS
--cluster``), ``instance next`` (a plan carried forward) and ``instance next jobs`` (with ``--jobs --cluster``),
``launch from`` (``launch --from``, Slurm follow-on rounds) and ``launch operator`` (shell, Slurm and Kubernetes
files of an instance made from a job list), ``agent squeue``, ``agent sinfo`` and ``agent scontrol`` (the parser,
then one whole agent round against a fake Slurm answering with the mutated document), ``agent prometheus`` (the
answer's parser), ``agent prometheus server`` (the agent's bounded client and retries against a local server
that answers, hangs, trickles one byte at a time, closes or resets mid-answer, fails with hostile text,
redirects, answers no JSON, stalls after the status line, sends a 1 MB header or a short body), ``api plan``,
``api plan jobs`` (``wattplan.plan`` then ``PlanResult.write``) and ``api
simulate``. YAML: a value of any JSON kind, hostile text (NUL, ``\x1b[2J``, ``\x1b]0;title\x07``, C1 CSI,
newlines, CR, shell metacharacters, option-like words, bidi overrides, a formula), YAML 1.1 implicit types (``0755``,
``1:30``, ``yes``, ``no``, ``on``, ``off``, ``y``, ``n``, a date, ``0x1F``, ``1_000``, ``+12``, ``.inf``; checked
against a control run with the scalar quoted), null tokens (``~``, ``null``, empty), an alias bomb (9 aliases per
level, 6 or 9 levels: 9**9 items from ~400 bytes), one alias, a duplicate key with another value, nesting 64 to
100,000 deep, a tab in the indentation, a ``---`` or ``...`` inside the document, two documents, tags
(``!!binary``, ``!!set``, ``!!timestamp``, ``!!python/object/apply``, a local tag). CSV job lists: every CSV kind
above, a column repeated with another value, hostile text in a cell, a newline inside a quoted cell, an implicit-
type token. JSON of plans and instances: every JSON kind, hostile text in any value, the file swapped whole for
one of another round or cluster. Slurm answers: a job's comment (near-miss opt-ins: a leading space, upper case,
a zero-width space, a repeated or unknown key, steps 0, 20 digits or full-width, ESC, a newline, NUL, another
type), name, user, account, hold reason (``JobHeldAdmin`` on a job that opted in), state, GRES, nodes, ids and
times; a node's name, state, flags and GRES; ``scontrol`` lines with a job name that spoofs a ``Nodes=`` line,
host lists and GPU index ranges of millions, reversed, nested or unterminated ranges, ESC, CRLF, NUL. Prometheus:
sample values Prometheus never writes (``1e400``, ``0x10``, ``1_000``, blank), hostile labels, any JSON kind.
The API: keywords with the option values above and Python values (None, [], {}, True, bytes), an
:class:`Instance` object with one field edited past every check (NaN budget, no jobs, negative steps...).
Outputs (new surfaces): the output or ``--instance-out`` set to an input or to the folder holding the inputs,
earlier outputs that a failure must leave in place, a launch folder that a previous launch and ``apply.sh`` wrote
(``submitted.tsv``, ``applied.tsv``, job logs: protected), a foreign non-empty folder. The oracle also flags a
raw control character printed, a ``PWNED`` file (an injection run), a ``.sh`` output ``bash -n`` refuses, a child
process left after the solver workers' shutdown, an agent call on a job that did not opt in or releasing an
administrator's hold, a must-refuse input read (duplicate key or column, several documents, a swapped file), and
a case past a memory limit (``MemoryError``) or its deadline. The pytest module runs 12 cases of each surface of
issue 22 and 4 to 10 chosen seeds of each of issue 41.

What it does not cover: one mutation per case (no combinations); ``profiles build`` (a sources folder),
``plan --from-solution`` (solver solution files) and ``--export-model``; Kubernetes and Slurm submission (only
rendering; ``apply.sh`` and the node scripts are never run, so the privilege order of a root node script, which
job ``apply.sh`` acts on and a job's ``env`` overriding the launcher's variables are the hand-written tests'),
``--ray``; ``cluster up``/``down`` and the emulated cluster; the live agent's process (its state-file lock,
kill -9 and the solver worker's death with its parent), the agent's allowed users and accounts (the fake
Slurm's jobs are root's); signals (SIGINT/SIGTERM), concurrent runs into one output, symlinks, permissions, files
over the size limits and very large inputs (memory, time) but the alias bomb; several nvidia-smi logs with several
job sides; semantic edits that keep a file well-formed but change its meaning consistently (an edited manifest
hash), which the hand-written tests cover.
"""
