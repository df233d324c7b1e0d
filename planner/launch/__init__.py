"""Turn a plan into what launchers execute: Slurm batch scripts, Kubernetes objects, node scripts.

Modules, one job each:

- :mod:`planner.launch.quoting`: shell quoting, comment-safe text, names safe for files, Slurm and Kubernetes
- :mod:`planner.launch.hosts`: plan node names -> real host names (``--node-map``, ``--node-prefix``)
- :mod:`planner.launch.render`: the shared model (launch units, per-GPU settings, placeholder command)
- :mod:`planner.launch.nvidia`: the ``nvidia-smi`` lines that set and reset a node's GPUs, one call per setting
- :mod:`planner.launch.slurm`, :mod:`planner.launch.kubernetes`, :mod:`planner.launch.shell`: one target each
- :mod:`planner.launch.output`: writing a rendered folder atomically
- :mod:`planner.launch.launcher`: load, validate, render, write (what ``wattplan launch`` calls)
- :mod:`planner.launch.diff`: the actions between two rounds' plans (``wattplan diff``)
- :mod:`planner.launch.limits`: a job's time limit and checkpoint signal from the round's length
- :mod:`planner.launch.followon`: a round after the last: allocations kept, re-set, ended, submitted
- :mod:`planner.launch.slurm_followon`: Slurm files of such a round (``apply.sh``, ``changes.md``)
"""
