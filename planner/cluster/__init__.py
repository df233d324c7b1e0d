"""An emulated GPU cluster on one Linux host: real Slurm, munge and Prometheus, emulated GPUs (issue 24).

Everything a test, a benchmark or a demo needs to run ``wattplan agent`` for real without GPUs
(docs/design.md §11.7). Modules:

- :mod:`planner.cluster.layout`: the folder of one emulated cluster, its manifest and its clock, and the file
  contracts between the agent, the node scripts, the emulator and the stand-in trainer
"""
