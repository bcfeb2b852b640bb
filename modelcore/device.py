"""Choosing the torch device: "auto" takes CUDA when there is one."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch

DEVICE_CHOICES = ("auto", "cpu", "cuda")


def resolve_device(name: str | None = None) -> torch.device:
    """"auto" | "cpu" | "cuda" (default: $MODELCORE_DEVICE, else "auto") -> a torch.device."""
    import torch  # here, so that the CLI's choices (DEVICE_CHOICES) load no torch

    name = name or os.environ.get("MODELCORE_DEVICE") or "auto"
    if name not in DEVICE_CHOICES:
        raise ValueError(f"unknown device {name!r} (choose from: {', '.join(DEVICE_CHOICES)})")
    if name == "auto":
        name = "cuda" if torch.cuda.is_available() else "cpu"
    if name == "cuda" and not torch.cuda.is_available():
        raise ValueError("device 'cuda' was asked for but CUDA is not available here")
    return torch.device(name)
