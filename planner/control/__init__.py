"""One scheduler, two clusters: the agent's control loop on a live Slurm or on a simulated one (issue 43).

``wattplan agent`` and ``wattplan simulate`` run the same loop (:mod:`planner.agent.loop`): the
same rounds, the same round trigger, the same decisions turned into the same Slurm calls. What differs is the
cluster under it: a real Slurm with Prometheus and wall-clock time, or :mod:`planner.control.sim_slurm`, a Slurm
on a virtual clock that answers the same commands and jumps from one event to the next (docs/design.md §10.8).
Modules:

- :mod:`planner.control.truth_model`: what GPUs really do: each job's speed and each GPU's power from a truth
  library, in the replay's arithmetic (pure, no I/O); the emulated cluster's GPUs and the simulated Slurm both
  use it
- :mod:`planner.control.sim_slurm`: a Slurm cluster on a virtual clock: its scheduling, requeues, checkpoint
  loads, GPU physics and energy, answering ``squeue``/``sinfo``/``scontrol`` as Slurm 22.05 does
- :mod:`planner.control.sim_slurm_text`: what the simulated Slurm prints (``squeue``/``sinfo`` JSON, the text
  of ``scontrol show job -d``, its refusals) and how it reads its commands' arguments
- :mod:`planner.control.virtual_timer`: the agent's clock in a replay: the simulated cluster's time, waits that
  jump from one event to the next
- :mod:`planner.control.cap_schedule`: a power cap that moves, in a replay: the schedule that writes the agent's
  cap file on the virtual clock, and how soon and how well each step was followed
- :mod:`planner.control.slurm_replay`: one policy's replay: the agent's loop on the simulated Slurm (or one of
  Slurm's baselines alone), its figures and files
- :mod:`planner.control.session`: ``simulate``: every policy, the comparison and its table
- :mod:`planner.control.common_window`: runs of one comparison over the same window, each charged its idle tail
- :mod:`planner.control.saved_replay`: a policy's replay read back from its files, so that a rerun resumes policy
  by policy
- :mod:`planner.control.frontier`: ``frontier``: every point of the sweep replayed on the simulated
  Slurm, against Slurm alone and the powered floor
"""
