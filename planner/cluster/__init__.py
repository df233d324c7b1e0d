"""An emulated GPU cluster on one Linux host: real Slurm, munge and Prometheus, emulated GPUs (issue 24).

Everything a test, a benchmark or a demo needs to run ``wattplan agent`` for real without GPUs
(docs/design.md §11.7). Modules:

- :mod:`planner.cluster.layout`: the folder of one emulated cluster, its manifest and its clock, and the file
  contracts between the agent, the node scripts, the emulator and the stand-in trainer
- :mod:`planner.cluster.slurm_daemons`: a real Slurm on this host (munged, slurmctld, one slurmd per node, fake
  GPU devices), started and stopped by PID
- :mod:`planner.cluster.slurm_root`: the cluster's Slurm from another root filesystem (``cluster up --slurm-root``,
  Slurm 24.11 beside the host's): a mount namespace that holds it, and wrappers that run its programs there
- :mod:`planner.cluster.nvidia_smi`: the nvidia-smi stand-in: GPUs that are JSON files (power limit, clock lock),
  limits from the manifest's nodes (:func:`~planner.cluster.nvidia_smi.node_gpu_limits`)
- :mod:`planner.cluster.emulator`: the emulated GPUs' daemon: ``emu/rates.json``, emulated energy counters that
  survive a restart, DCGM-named ``/metrics``
- :mod:`planner.cluster.trainer`: the stand-in trainer a Slurm job runs: steps at the emulator's speed,
  checkpoint, resume after requeue, done marker
- :mod:`planner.cluster.prometheus_server`: a real Prometheus scraping the emulator, started and stopped by PID
- :mod:`planner.cluster.report`: ``wattplan cluster report``: energy from Prometheus, JCTs, per-job times and
  energy
- :mod:`planner.cluster.processes`: what a PID runs, whether it runs, stopping it only if it runs what was started
- :mod:`planner.cluster.power`: Slurm's power saving (``cluster up --power-save``): the suspend, resume and
  ``PrologSlurmctld`` programs, the nodes' power states the emulator reads, the slurmds a boot starts
- :mod:`planner.cluster.up`: ``wattplan cluster up`` and ``down``
- :mod:`planner.cluster.report_table`: the report as rows with their units (the summary, against another run,
  and one row per job)
- :mod:`planner.cluster.options`: the options of ``cluster up``, ``submit`` and ``report``, declared once (one
  record each; the command line is generated from them)
- :mod:`planner.cluster.owned`: which folder ``cluster up`` may take (new, empty or marked) and the only entries
  of it wattplan deletes
- :mod:`planner.cluster.submit`: ``wattplan cluster submit``: a trace's jobs sent to Slurm at their arrival times
"""
