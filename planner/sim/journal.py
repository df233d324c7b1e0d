"""A replay written as it goes, and resumed where it stopped (``wattplan simulate --out``).

A :class:`ReplayJournal` hears every round of one policy's replay (:class:`planner.sim.engine.ReplayObserver`):

* ``rounds.csv`` gets the round's row appended and flushed (the same row the final file has);
* ``jobs.csv`` gets a row for each job that finished in the round (its final numbers);
* every ``every_rounds`` rounds or ``every_s`` seconds of wall time, whichever comes first, and when the replay
  stops, the whole :class:`~planner.sim.engine.ReplayState` is pickled to ``.replay-checkpoint.pkl`` in the
  folder (written to a temporary file, then renamed over the old one: a kill leaves the old checkpoint or the
  new one, never half).

Resuming (:meth:`ReplayJournal.load`): a rerun of the same command finds the checkpoint, checks that it was
written for the same replay (the SHA-256 of the replay spec and of every input file's bytes, and the policy),
rewrites ``rounds.csv`` and ``jobs.csv`` from the checkpoint (rows streamed after it are dropped: those rounds
are played again) and the engine goes on from its next round. The replay is deterministic given its state
(policies keep nothing between rounds; the noise generator's state is in the checkpoint), so a resumed replay's
outputs equal an uninterrupted one's, wall-clock fields aside. A checkpoint of another replay (other options, an
input file changed, another policy) or one that cannot be read is not resumed: the replay starts over and
overwrites it, as a replay into a used folder always did (:attr:`ReplayJournal.discarded` says why, and the command
line says it on stderr); ``--fresh`` (:func:`remove_checkpoint`) starts over in any case. A checkpoint is a pickle:
load only your own.

The files are rewritten from the checkpoint's state in the current columns (``policy`` first, ``nodes_on_<type>``
per GPU type of ``gpu_types``), so a checkpoint written before those columns resumes into files with them.
"""

from __future__ import annotations

import hashlib
import pickle
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from wattplan.planner.contracts.jsonio import write_bytes_atomic, write_text_atomic
from wattplan.planner.files.digests import update_with_file
from wattplan.planner.sim.engine import ReplayState, RoundRecord
from wattplan.planner.sim.output import JOB_COLUMNS, csv_lines, job_row, round_columns, round_row
from wattplan.planner.sim.state import JobState

CHECKPOINT_FILE = ".replay-checkpoint.pkl"
CHECKPOINT_VERSION = 1
EVERY_ROUNDS = 1000
"""Rounds between two checkpoints (at most; :data:`EVERY_S` may come first)."""
EVERY_S = 30.0
"""Wall-clock seconds between two checkpoints (at most)."""


def inputs_sha256(spec_text: str, files: Iterable[Path | None]) -> str:
    """SHA-256 of a replay: its spec's text, then each input file's path and bytes (None: absent)."""
    digest = hashlib.sha256(spec_text.encode("utf-8"))
    for path in files:
        digest.update(b"\0" + str(path).encode("utf-8") + b"\0")
        if path is not None and Path(path).is_file():
            update_with_file(digest, Path(path))
    return digest.hexdigest()


def remove_checkpoint(folder: Path) -> None:
    """Forget a replay's checkpoint in ``folder`` (``--fresh``); nothing happens when there is none."""
    (Path(folder) / CHECKPOINT_FILE).unlink(missing_ok=True)


class ReplayJournal:
    """Streams one policy's replay into ``folder`` and checkpoints it (module docstring)."""

    def __init__(
        self,
        folder: Path,
        replay_sha256: str,
        policy: str,
        duration_s: float,
        gpu_types: Sequence[str],
        every_rounds: int = EVERY_ROUNDS,
        every_s: float = EVERY_S,
    ) -> None:
        self.folder = Path(folder)
        self.replay_sha256 = replay_sha256
        self.policy = policy
        self.duration_s = duration_s
        self.gpu_types = tuple(gpu_types)
        """The cluster's GPU types: the ``nodes_on_<type>`` columns of ``rounds.csv``."""
        self.every_rounds = every_rounds
        self.every_s = every_s
        self.resumed_at: int | None = None
        """The number of rounds the checkpoint held when this journal resumed one (None: started fresh)."""
        self.discarded: str | None = None
        """Why a checkpoint in the folder was not resumed (another replay's, unreadable); None: none was there."""
        self._written: set[str] = set()
        self._saved_rounds = 0
        self._saved_at = time.monotonic()

    @property
    def checkpoint(self) -> Path:
        """The checkpoint file."""
        return self.folder / CHECKPOINT_FILE

    def load(self) -> ReplayState | None:
        """The checkpointed state of this replay; None when there is none or it is another replay's.

        Either way the streamed files are (re)started: from the checkpoint's rounds and finished jobs, or empty.
        """
        state = self._read()
        self.begin(state)
        return state

    def _read(self) -> ReplayState | None:
        """The checkpoint's state when it is this replay's; else None, with :attr:`discarded` saying why."""
        if not self.folder.is_dir() or not self.checkpoint.is_file():
            return None
        try:
            doc = pickle.loads(self.checkpoint.read_bytes())
        except Exception as exc:  # a foreign or damaged file: any unpickling error
            self.discarded = f"the checkpoint {self.checkpoint} could not be read ({exc})"
            return None
        state = doc.get("state") if isinstance(doc, dict) else None
        if not isinstance(doc, dict) or doc.get("version") != CHECKPOINT_VERSION or not isinstance(state, ReplayState):
            self.discarded = f"the checkpoint {self.checkpoint} is of another format"
        elif doc.get("policy") != self.policy:
            self.discarded = f"the checkpoint {self.checkpoint} is of policy {doc.get('policy')!r}"
        elif doc.get("replay_sha256") != self.replay_sha256:
            self.discarded = f"the checkpoint {self.checkpoint} is of a replay with other options or input files"
        else:
            self.resumed_at = len(state.rounds)
            return state
        return None

    def begin(self, state: ReplayState | None) -> None:
        """Write ``rounds.csv`` and ``jobs.csv`` as of ``state`` (None: headers only), replacing older ones."""
        rounds = [] if state is None else [self._round_row(r) for r in state.rounds]
        done = [] if state is None else [s for s in state.states if s.done]
        self._written = {s.id for s in done}
        self._saved_rounds = 0 if state is None else len(state.rounds)
        # the shared writer: it makes the folder and names a bad --out (a file, no permission) as an InputError
        write_text_atomic(self.folder / "rounds.csv", csv_lines(rounds, round_columns(self.gpu_types)))
        write_text_atomic(self.folder / "jobs.csv", csv_lines(self._job_rows(done), JOB_COLUMNS))

    def _round_row(self, r: RoundRecord) -> tuple[Any, ...]:
        return round_row(r, self.duration_s, self.policy, self.gpu_types)

    def _job_rows(self, done: Iterable[JobState]) -> list[tuple[Any, ...]]:
        return [job_row(s, self.policy) for s in done]

    def round_done(self, state: ReplayState) -> None:
        """Append the round and the jobs it finished; checkpoint when it is time."""
        with open(self.folder / "rounds.csv", "a", encoding="utf-8") as f:
            f.write(csv_lines([self._round_row(state.rounds[-1])]))
        if state.rounds[-1].finished:
            new = [s for s in state.states if s.done and s.id not in self._written]
            self._written.update(s.id for s in new)
            with open(self.folder / "jobs.csv", "a", encoding="utf-8") as f:
                f.write(csv_lines(self._job_rows(new)))
        due = len(state.rounds) - self._saved_rounds >= self.every_rounds
        if due or time.monotonic() - self._saved_at >= self.every_s:
            self.save(state)

    def finished(self, state: ReplayState) -> None:
        """Checkpoint the stopped replay: a rerun then replays nothing and rewrites its results."""
        self.save(state)

    def save(self, state: ReplayState) -> None:
        """Pickle ``state`` to the checkpoint (atomically)."""
        doc = {
            "version": CHECKPOINT_VERSION,
            "policy": self.policy,
            "replay_sha256": self.replay_sha256,
            "state": state,
        }
        write_bytes_atomic(self.checkpoint, pickle.dumps(doc, protocol=pickle.HIGHEST_PROTOCOL))
        self._saved_rounds = len(state.rounds)
        self._saved_at = time.monotonic()
