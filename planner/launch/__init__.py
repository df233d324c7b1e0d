"""Turn a plan into what launchers execute: Slurm batch scripts, Kubernetes objects, node scripts.

Modules, one job each:

- :mod:`planner.launch.quoting`: shell quoting, comment-safe text, names safe for files, Slurm and Kubernetes
- :mod:`planner.launch.hosts`: plan node names -> real host names (``--node-map``, ``--node-prefix``)
- :mod:`planner.launch.render`: the shared model (launch units, per-GPU settings, placeholder command)
- :mod:`planner.launch.nvidia`: the ``nvidia-smi`` lines that set and reset one GPU
- :mod:`planner.launch.slurm`, :mod:`planner.launch.kubernetes`, :mod:`planner.launch.shell`: one target each
- :mod:`planner.launch.output`: writing a rendered folder atomically
- :mod:`planner.launch.launcher`: load, validate, render, write (what ``wattplan launch`` calls)
- :mod:`planner.launch.diff`: the actions between two rounds' plans (``wattplan diff``)
"""
