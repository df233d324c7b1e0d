"""GPU model names as nvidia-smi writes them (its ``name`` column) -> the GPU type names of profile libraries.

The name is split into words at spaces and dashes (``"Tesla V100-SXM2-32GB"`` -> ``Tesla``, ``V100``,
``SXM2``, ``32GB``) and the first word found in :data:`GPU_MODELS` (case-insensitive) gives the type:
``"Tesla V100-SXM2-32GB"`` -> ``v100``, ``"NVIDIA A100-SXM4-80GB"`` -> ``a100``. Memory size and form
factor are not told apart (a 16 GB and a 32 GB V100 are both ``v100``); ``--gpu-type`` names anything else.
"""

from __future__ import annotations

import re

GPU_MODELS: dict[str, str] = {
    "K80": "k80",
    "P100": "p100",
    "V100": "v100",
    "T4": "t4",
    "A10G": "a10g",
    "A40": "a40",
    "A100": "a100",
    "L4": "l4",
    "L40S": "l40s",
    "H100": "h100",
    "H200": "h200",
}
"""The model word of an nvidia-smi name -> the library's GPU type (the shipped library has ``v100`` and ``p100``)."""

_WORDS = re.compile(r"[\s\-]+")


def gpu_type_from_name(name: str) -> str | None:
    """The GPU type of the nvidia-smi name ``name`` (module docstring); None when no word of it is a known model."""
    for word in _WORDS.split(name.strip()):
        gpu_type = GPU_MODELS.get(word.upper())
        if gpu_type is not None:
            return gpu_type
    return None


def known_models() -> str:
    """The known model words, for messages: ``K80, P100, V100, ...``."""
    return ", ".join(GPU_MODELS)
