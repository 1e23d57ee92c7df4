"""Token models: how many seconds of exclusive service a request costs at each stage."""

from tailbound.profiles.tokens import (
    LinkModel,
    MessageSizes,
    SsdModel,
    SsdProfile,
    TokenModel,
    stage_model,
)

__all__ = ["LinkModel", "MessageSizes", "SsdModel", "SsdProfile", "TokenModel", "stage_model"]
