"""``wattplan agent``: the control loop on a live Slurm cluster (docs/design.md §11.6), and on a simulated one (§10.8).

Modules:

- :mod:`planner.agent.loop`: one round (read, observe, learn, build, decide through the policy, apply) and the loop
  around it
- :mod:`planner.agent.timing`: where the loop reads time and waits (the wall clock; a simulated Slurm's virtual
  clock in a replay, :mod:`planner.control.virtual_timer`)
- :mod:`planner.agent.options`: ``wattplan agent``'s options, declared once (:class:`AgentOptions`): the command
  line is generated from it and the loop's configuration built from it
- :mod:`planner.agent.run`: the loop put together: Slurm's environment, the state file, the Prometheus observer
- :mod:`planner.agent.reference`: the JCT reference, ``fifo-max`` over the jobs seen so far in continuous time, as
  Slurm alone schedules them
- :mod:`planner.agent.steering`: each round's ``delta``, credit weight and tail bound from the one steering record
  (governor, signal, tail bound), the reference following the jobs seen
- :mod:`planner.agent.aligned_blocks`: running jobs' GPU indices as aligned blocks on their nodes, so that the
  round's placement keeps every job where Slurm runs it
- :mod:`planner.agent.decide`: a plan turned into Slurm calls and setting files (pairs as host and guest)
- :mod:`planner.agent.store`: the state in SQLite (jobs, desired configurations, rounds, calls, observations,
  the holds the agent owns), one agent per state file (a lock held for the process's life)
- :mod:`planner.agent.learned_state`: what the learner (``--learn``) was shown, kept in the state round by round,
  so that a restarted agent takes back what it had learned
- :mod:`planner.agent.trust`: whose jobs the agent acts on (opted in *and* an allowed user or account) and which
  holds it may release (its own; never an administrator's)
- :mod:`planner.agent.node_settings`: the setting file the node scripts read, the clock
- :mod:`planner.agent.power_cap`: a power cap that moves: the cap file an operator or a grid program writes,
  read every round (``--power-cap-file``)
- :mod:`planner.agent.cap_endpoint`: the same cap over HTTP (``--power-cap-port``): ``PUT /power-cap`` with a
  bearer token writes the cap file
- :mod:`planner.agent.energy_budget`: an energy budget over a period (``--energy-budget-kwh``, ``--budget-period-s``):
  its periods, the cluster's energy charged window by window in the state, each round's paced share
- :mod:`planner.agent.prometheus`: a strict client of Prometheus' query API, with bounded retries
- :mod:`planner.agent.observations`: one window's energy per GPU, node and job (a shared GPU's energy
  apportioned), steps and scrape freshness, from Prometheus
- :mod:`planner.agent.progress_estimate`: a job's steps estimated from what it ran at and the profiles, for jobs
  that export no progress
- :mod:`planner.agent.check`: ``wattplan agent check``: read-only probes of Slurm, its configuration, the node
  scripts, the settings folder and Prometheus, each finding ok, warn or missing
- :mod:`planner.agent.metrics`: the agent's own Prometheus metrics (``--metrics-port``), counted each round
- :mod:`planner.agent.report`: ``wattplan agent report``: what the agent did over a period, from its state
  (read-only): rounds, calls by outcome, jobs by end, restarts, JCT, measured GPU energy; a figure
- :mod:`planner.agent.slurm_detail`: GPU indices of running jobs from ``scontrol show job -d``; host lists

- :mod:`planner.agent.commands`: one external command run as an argv list, its result, and the error for a
  command that could not give an answer
- :mod:`planner.agent.slurm_version`: the Slurm version (``sinfo --version``) and whether the agent supports it
- :mod:`planner.agent.slurm_schema`: the JSON generations of Slurm's releases (22.05's v0.0.38, data_parser
  v0.0.40 to v0.0.46), how to ask for each and which release prints which
- :mod:`planner.agent.slurm_queue`: strict readers of the jobs and nodes in each generation: the jobs that
  opted in (``--comment=wattplan:type=...;steps=...``) and the nodes
- :mod:`planner.agent.slurm_actions`: hold, update, release, requeue-hold and cancel as data, grouped into the
  fewest ``scontrol``/``scancel`` calls, and applied (or only listed, in a dry run); a node's power-down call
- :mod:`planner.agent.slurm_config`: ``scontrol show config`` as a map, and the nodes Slurm's power saving keeps on
- :mod:`planner.agent.node_power`: which idle nodes to power down now (``--power-down``): those the recent arrivals
  are not expected to need within a node's off-and-on cycle

Package data: ``node_files/`` holds the Slurm prolog, epilog and task prolog and the node agent an operator
installs on every GPU node (its README.md says how).
"""
