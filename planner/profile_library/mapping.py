"""Which Zeus power-limit curve each Gavel job family borrows (the one place that decides it).

Gavel (``simulation_throughputs.json``) measured the throughput of 26 job types at the GPUs'
default power limit; Zeus (``summary_power_<gpu>.csv``) measured, for six other workloads,
how the time per epoch (s) and the average GPU power (W) change with the power limit (W).
A profile of a Gavel job type at power limit ``s`` borrows the Zeus curve of the workload
listed here for its family, at one Zeus batch size chosen by :func:`choose_zeus_batch_size`.

A *family* is the Gavel job type without its ``" (batch size N)"`` suffix
(``"ResNet-50 (batch size 64)"`` -> ``"ResNet-50"``); ``A3C`` and ``CycleGAN`` have none.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Collection
from dataclasses import dataclass
from fractions import Fraction

_BATCH_SUFFIX = re.compile(r"^(?P<family>.+) \(batch size (?P<batch>\d+)\)$")


@dataclass(frozen=True, slots=True)
class ZeusWorkload:
    """A Zeus workload (``dataset``, ``network`` as spelled in the CSV) and why it was chosen."""

    dataset: str
    network: str
    why: str


FAMILY_TO_ZEUS: dict[str, ZeusWorkload] = {
    "ResNet-18": ZeusWorkload(
        "cifar100",
        "shufflenetv2",
        "Gavel trains ResNet-18 on CIFAR-10: a small CNN on 32x32 images; Zeus's closest "
        "workload is ShuffleNet-v2 on CIFAR-100, also a small CNN on the same 32x32 images.",
    ),
    "ResNet-50": ZeusWorkload(
        "imagenet",
        "resnet50",
        "Same network and dataset: Gavel and Zeus both train ResNet-50 on ImageNet.",
    ),
    "CycleGAN": ZeusWorkload(
        "imagenet",
        "resnet50",
        "CycleGAN is a convolutional image-to-image model on full-size images: a heavy, "
        "compute-bound conv workload, closest to ResNet-50 on ImageNet.",
    ),
    "Transformer": ZeusWorkload(
        "squad",
        "bert_base_uncased",
        "Gavel's Transformer does translation with attention layers; Zeus's BERT-base "
        "(SQuAD) is the attention-based Transformer encoder among its workloads.",
    ),
    "LM": ZeusWorkload(
        "librispeech",
        "deepspeech2",
        "Gavel's LM is an LSTM language model; DeepSpeech2 (LibriSpeech) is Zeus's only "
        "recurrent network, so its power curve has the same recurrent, sequential kernels.",
    ),
    "Recommendation": ZeusWorkload(
        "movielens-1m",
        "ncf",
        "Gavel's Recommendation is an autoencoder on MovieLens-20M; Zeus's NCF on "
        "MovieLens-1M is the same domain with the same light, memory-bound GPU load.",
    ),
    "A3C": ZeusWorkload(
        "cifar100",
        "shufflenetv2",
        "A3C is reinforcement learning with small conv nets on small (Atari) frames: a light "
        "GPU load, closest to the small CNN on 32x32 images (ShuffleNet-v2, CIFAR-100).",
    ),
}


def job_family(job_type: str) -> str:
    """The Gavel job type without its ``" (batch size N)"`` suffix."""
    m = _BATCH_SUFFIX.match(job_type)
    return m.group("family") if m else job_type


def gavel_batch_size(job_type: str) -> int | None:
    """The ``N`` of ``" (batch size N)"`` in a Gavel job type, or None when it has none."""
    m = _BATCH_SUFFIX.match(job_type)
    return int(m.group("batch")) if m else None


def zeus_workload(job_type: str) -> ZeusWorkload:
    """The Zeus workload whose curve ``job_type`` borrows; KeyError names an unmapped family."""
    family = job_family(job_type)
    try:
        return FAMILY_TO_ZEUS[family]
    except KeyError:
        raise KeyError(f"Gavel job family {family!r} (type {job_type!r}) has no Zeus mapping") from None


def nearest_batch_size(target: int, measured: Collection[int]) -> int:
    """The measured batch size ``b`` nearest to ``target`` in ``|log2(b) - log2(target)|``.

    Distances are compared exactly as the ratios ``max(b, t) / min(b, t)``; a tie goes to
    the larger batch size.
    """
    if not measured:
        raise ValueError("no measured batch sizes to choose from")
    return min(measured, key=lambda b: (Fraction(max(b, target), min(b, target)), -b))


def choose_zeus_batch_size(job_type: str, measured: Collection[int]) -> tuple[int, str]:
    """The Zeus batch size that ``job_type`` borrows and the rule that chose it, in words.

    ``measured`` are the batch sizes of the mapped Zeus workload measured on *every* GPU
    type of the library, so all GPU types borrow the same Zeus row. With a Gavel batch
    size: :func:`nearest_batch_size`. Without one (A3C, CycleGAN): the median of the
    measured batch sizes (the lower median when their number is even).
    """
    sizes = sorted(set(measured))
    target = gavel_batch_size(job_type)
    if target is None:
        chosen = statistics.median_low(sizes)
        return chosen, f"no Gavel batch size: median (low) of the Zeus batch sizes {sizes}"
    chosen = nearest_batch_size(target, sizes)
    return chosen, f"nearest in log2 to Gavel batch size {target} among the Zeus batch sizes {sizes}"
