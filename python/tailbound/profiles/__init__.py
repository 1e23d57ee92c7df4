"""Token models: how many seconds of exclusive service a request costs at each stage."""

from tailbound.profiles.disk import DiskModel, DiskProfile, SeekCurve
from tailbound.profiles.tokens import (
    LinkModel,
    MessageSizes,
    SsdModel,
    SsdProfile,
    TokenModel,
    load_profile,
    stage_model,
)

__all__ = [
    "DiskModel",
    "DiskProfile",
    "LinkModel",
    "MessageSizes",
    "SeekCurve",
    "SsdModel",
    "SsdProfile",
    "TokenModel",
    "load_profile",
    "stage_model",
]
