"""Profiles from measurements: ingest real logs, fit the full table, check fidelity, learn online.

Modules (each one job):

* :mod:`planner.profiling.points`: the measured point, the one record every source becomes.
* ``nvidia_smi``, ``zeus_windows``, ``zeus_summary``, ``ingest``: readers of the formats users have;
  ``job_side`` (what ran where, and its steps), ``smi_points`` (a log and its runs -> points) and
  ``gpu_models`` (nvidia-smi's GPU name -> the library's GPU type); ``smi_frame`` (an nvidia-smi log's rows as
  column arrays), ``csv_header`` (a measurement CSV's header, every column once) and ``units`` (a measured
  value's unit and its factor to the planner's).
* ``scaling``, ``power_model``, ``pair_rates``, ``job_model``, ``fit``, ``sanity``: from sparse points to the
  planner's full table (``basis``: the entry's basis document; ``fit_output``: the fit's tables).
* ``check``, ``leave_one_out``: predicted against measured, per quantity (``check_output``: its report files
  and tables).
* ``truth``: a library bent the way real measurements differ, for replays that test learning
  (the learner itself is :mod:`planner.sim.learning`).

A profile library (``wattplan.profiles/1``) may carry, besides ``gpu_types``, ``profiles`` and ``pairs``:

* ``measurements``: measured points (:func:`planner.profiling.points.point_to_doc`);
* on a profile or pair entry, ``basis``: ``{"kind": "measured" | "fitted" | "prior" | "repaired",
  "points": [point ids], "rel_error": expected relative error or null, "reason": text}``;
* on a profile entry, ``utilisation``: the fraction of time the GPUs compute (0-1);
* on a GPU type, ``held_idle_power_w``, ``node_power_w`` and ``top_limit_w`` when measured, with
  ``idle_basis`` naming the points.
Readers that do not know these keys ignore them.
"""
