"""``rewards.ray``, the section rewardkit-ray owns (registered by its plugin through
``register_config_sections``)."""

from __future__ import annotations

from pydantic import Field

from rewardkit.plugin import Section


class RayConfig(Section):
    """``rewards.ray``: where the Ray cluster is and how many reward actors to start."""

    address: str | None = None
    num_actors: int = Field(default=2, ge=1)
