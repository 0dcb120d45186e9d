"""Decoded media: decoder attestation, checks of what a decoder returns, and the uint8 transform.

A decoder is injected by the model that owns it (a VAE on the model's device). It must attest
``output_range = "neg_one_to_one"``, and name itself (``name``, ``revision``: they enter the
provider's identity; the object does not). The adapter calls ``decoder.decode(latent)`` under
``torch.no_grad()`` and checks the result before anything is sent anywhere: a ``torch.Tensor``,
floating, of shape ``[1, 3, T, H, W]`` (video) or ``[1, 3, 1, H, W]`` (image), finite, and within
``[-1, 1]`` up to ``tolerance`` (values just outside are clamped by the transform; values far
outside mean the decoder does not produce what it attests).

The transform to pixels is exact and fixed, in fp32:
``u8 = round_half_to_even((clamp(x.float(), -1, 1) + 1) * 127.5)``, so -1 -> 0, 0 -> 128, 1 -> 255.
It runs a few frames at a time on the decoder's device and lands in one CPU uint8 buffer: video
``[1, 3, T, H, W]``, image ``[1, H, W, 3]``. torch is imported only when these functions run.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from rewardkit.plugin import RewardContractError

OUTPUT_RANGE = "neg_one_to_one"
Layout = Literal["video", "image"]
# fp32 working memory per conversion step on the decoder's device.
_CHUNK_BYTES = 64 << 20


class DecodedMediaError(RewardContractError):
    """A decoder or what it returned breaks the decoded-media contract; nothing was sent."""


@dataclass(frozen=True)
class DecoderAttestation:
    """What a decoder says about itself; JSON-compatible, part of the provider's identity."""

    name: str
    revision: str
    output_range: str

    def identity(self) -> dict[str, str]:
        return {"name": self.name, "revision": self.revision, "output_range": self.output_range}


def attest(decoder: Any) -> DecoderAttestation:
    """Check a decoder's attestation; raise ``DecodedMediaError`` saying what is missing."""
    if decoder is None:
        raise DecodedMediaError(
            "no decoder was given: pass the model's decoder as a runtime object "
            "(rewardkit.load(config, runtime={'decoder': decoder}))",
            rule="decoder-missing",
        )
    kind = type(decoder).__name__
    if not callable(getattr(decoder, "decode", None)):
        raise DecodedMediaError(f"decoder {kind} has no decode(latent) method", rule="decoder-interface")
    output_range = getattr(decoder, "output_range", None)
    if output_range != OUTPUT_RANGE:
        raise DecodedMediaError(
            f"decoder {kind} attests output_range={output_range!r}; it must explicitly attest "
            f"output_range={OUTPUT_RANGE!r} (decoded values in [-1, 1])",
            rule="decoder-attestation",
        )
    name = getattr(decoder, "name", None)
    revision = getattr(decoder, "revision", None)
    for label, value in (("name", name), ("revision", revision)):
        if not isinstance(value, str) or not value.strip():
            raise DecodedMediaError(
                f"decoder {kind} must state its {label} as a non-empty string (got {value!r}); "
                "it enters the provider's identity",
                rule="decoder-attestation",
            )
    return DecoderAttestation(name, revision, output_range)  # type: ignore[arg-type]


def decoder_identity(objects: Mapping[str, Any]) -> dict[str, str]:
    """What stands for the decoder in a provider identity: its attestation, never the object."""
    return attest(objects["decoder"]).identity()


def decode(decoder: Any, latent: Any) -> Any:
    """``decoder.decode(latent)`` under ``torch.no_grad()``."""
    import torch

    with torch.no_grad():
        return decoder.decode(latent)


def check_decoded(decoded: Any, layout: Layout, tolerance: float = 0.05) -> None:
    """Raise ``DecodedMediaError`` unless ``decoded`` is one floating, finite, in-range sample."""
    import torch

    expected = "[1, 3, T, H, W]" if layout == "video" else "[1, 3, 1, H, W]"
    if not isinstance(decoded, torch.Tensor):
        raise DecodedMediaError(
            f"the decoder returned {type(decoded).__name__}, not a torch.Tensor {expected}",
            rule="decoded-type",
        )
    shape = tuple(decoded.shape)
    if not decoded.is_floating_point():
        raise DecodedMediaError(
            f"the decoder returned dtype {decoded.dtype}; expected a floating tensor in [-1, 1]",
            rule="decoded-dtype",
        )
    bad_shape = (
        len(shape) != 5
        or shape[0] != 1
        or shape[1] != 3
        or (layout == "image" and shape[2] != 1)
        or min(shape) < 1
    )
    if bad_shape:
        what = "one image" if layout == "image" else "one video"
        raise DecodedMediaError(
            f"the decoder returned shape {list(shape)}; expected {expected} ({what}, 3 channels)",
            rule="decoded-shape",
        )
    low, high = (float(value) for value in torch.aminmax(decoded.detach()))
    if not (np.isfinite(low) and np.isfinite(high)):
        raise DecodedMediaError(
            f"the decoded {layout} is not finite (min {low}, max {high})", rule="decoded-finite"
        )
    if low < -1.0 - tolerance or high > 1.0 + tolerance:
        raise DecodedMediaError(
            f"the decoded {layout} spans [{low:.4g}, {high:.4g}], outside [-1, 1] by more than "
            f"{tolerance:g}; the decoder attests {OUTPUT_RANGE!r} but does not produce it",
            rule="decoded-range",
        )


def to_uint8(decoded: Any, layout: Layout) -> np.ndarray:
    """Pixels: video ``[1, 3, T, H, W]`` or image ``[1, H, W, 3]``, CPU uint8, C-contiguous.

    ``round_half_to_even((clamp(x.float(), -1, 1) + 1) * 127.5)`` in fp32, a few frames at a time.
    """
    import torch

    frames = decoded.shape[2]
    _, channels, _, height, width = decoded.shape
    step = max(1, _CHUNK_BYTES // max(1, channels * height * width * 4))
    if layout == "image":
        out = torch.empty((1, height, width, channels), dtype=torch.uint8)
        out[0].copy_(_pixels(decoded[0, :, 0]).permute(1, 2, 0))
        return out.numpy()
    out = torch.empty((1, channels, frames, height, width), dtype=torch.uint8)
    for start in range(0, frames, step):
        stop = min(frames, start + step)
        out[:, :, start:stop].copy_(_pixels(decoded[:, :, start:stop]))
    return out.numpy()


def _pixels(values: Any) -> Any:
    import torch

    work = values.detach().to(dtype=torch.float32, copy=True)
    work.clamp_(-1.0, 1.0).add_(1.0).mul_(127.5).round_()  # torch.round: half to even
    return work.to(torch.uint8).cpu()
