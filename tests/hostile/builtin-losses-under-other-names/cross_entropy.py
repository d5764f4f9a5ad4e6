"""Cross-entropy through a distribution's log-probability."""

from __future__ import annotations

import torch
from torch.distributions import Categorical


def cross_entropy(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    return -Categorical(logits=logits).log_prob(labels).mean()
