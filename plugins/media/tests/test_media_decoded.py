"""Decoder attestation, decoded-tensor checks and the exact uint8 transform (needs torch).

Runs in the tox env ``dancegrpo``, which installs the CPU torch; the core env has no torch and
leaves this module out (tox.ini), so a missing torch here is an import error, never a skip.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from rewardkit_media import decoded as decoded_module
from rewardkit_media.decoded import (
    DecodedMediaError,
    attest,
    check_decoded,
    decode,
    to_uint8,
)

# Pinned: fp32 input -> uint8, for round_half_to_even((clamp(x, -1, 1) + 1) * 127.5) in fp32.
VECTORS = [
    (-1.0, 0),
    (0.0, 128),  # 127.5 exactly: half to even
    (1.0, 255),
    (0.5, 191),  # 191.25
    (-0.5, 64),  # 63.75
    (0.99999994, 255),  # just inside: 254.9999923...
    (-0.99999994, 0),  # just inside: 7.6e-06
    (1.0000001, 255),  # just outside: clamped
    (-1.0000001, 0),
    (1.04, 255),
    (-1.04, 0),
    (0.003921569, 128),  # (1 + 1/255) * 127.5 = 128.0000...
    (-0.003921569, 127),
    (0.0039, 128),  # 127.99725
    (-0.0039, 127),  # 127.00275
]


def _reference(values: np.ndarray) -> np.ndarray:
    """An independent NumPy statement of the transform, in fp32 arithmetic."""
    x = np.clip(values.astype(np.float32), np.float32(-1), np.float32(1))
    return np.rint((x + np.float32(1)) * np.float32(127.5)).astype(np.uint8)


def _video(values: list[float]) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.float32).reshape(1, 1, len(values), 1, 1).expand(1, 3, -1, 1, 1)


def test_the_pinned_vectors():
    inputs = [value for value, _ in VECTORS]
    got = to_uint8(_video(inputs), "video")[0, 0, :, 0, 0].tolist()
    expected = _reference(np.array(inputs, dtype=np.float32)).tolist()
    assert got == [u8 for _, u8 in VECTORS]
    assert got == expected


def test_the_transform_equals_the_reference_on_random_values_in_every_float_dtype():
    generator = torch.Generator().manual_seed(0)
    values = torch.rand((1, 3, 5, 7, 9), generator=generator) * 2.2 - 1.1
    for dtype in (torch.float32, torch.float16, torch.bfloat16, torch.float64):
        cast = values.to(dtype)
        expected = _reference(cast.to(torch.float32).numpy())
        got = to_uint8(cast, "video")
        assert got.dtype == np.uint8 and got.shape == (1, 3, 5, 7, 9) and got.flags.c_contiguous
        assert np.array_equal(got, expected), dtype


def test_image_layout_is_hwc():
    values = torch.linspace(-1, 1, 3 * 4 * 5).reshape(1, 3, 1, 4, 5)
    got = to_uint8(values, "image")
    assert got.shape == (1, 4, 5, 3)
    expected = _reference(values[0, :, 0].numpy()).transpose(1, 2, 0)[None]
    assert np.array_equal(got, expected)
    assert got[0, 2, 3, 1] == expected[0, 2, 3, 1]


def test_chunked_conversion_equals_one_pass(monkeypatch):
    values = torch.rand((1, 3, 11, 6, 5)) * 2 - 1
    whole = to_uint8(values, "video")
    monkeypatch.setattr(decoded_module, "_CHUNK_BYTES", 3 * 6 * 5 * 4 * 2)  # two frames at a time
    assert np.array_equal(to_uint8(values, "video"), whole)


def test_the_input_is_not_modified():
    values = torch.full((1, 3, 2, 2, 2), 1.5)
    to_uint8(values, "video")
    assert torch.all(values == 1.5)


# -- checks ------------------------------------------------------------------------------------


def ok_video(**changes):
    return torch.zeros((1, 3, 4, 8, 8), **changes)


@pytest.mark.parametrize(
    ("value", "layout", "rule"),
    [
        (np.zeros((1, 3, 4, 8, 8), np.float32), "video", "decoded-type"),
        ([[0.0]], "video", "decoded-type"),
        (torch.zeros((1, 3, 4, 8, 8), dtype=torch.uint8), "video", "decoded-dtype"),
        (torch.zeros((1, 3, 4, 8, 8), dtype=torch.int32), "video", "decoded-dtype"),
        (torch.zeros((1, 3, 4, 8, 8), dtype=torch.bool), "video", "decoded-dtype"),
        (torch.zeros((3, 4, 8, 8)), "video", "decoded-shape"),
        (torch.zeros((1, 1, 3, 4, 8, 8)), "video", "decoded-shape"),
        (torch.zeros((2, 3, 4, 8, 8)), "video", "decoded-shape"),
        (torch.zeros((1, 4, 4, 8, 8)), "video", "decoded-shape"),
        (torch.zeros((1, 1, 4, 8, 8)), "video", "decoded-shape"),
        (torch.zeros((1, 3, 0, 8, 8)), "video", "decoded-shape"),
        (torch.zeros((1, 3, 2, 8, 8)), "image", "decoded-shape"),
        (torch.zeros((1, 8, 8, 3)), "image", "decoded-shape"),
        (torch.zeros((1, 3, 8, 8)), "image", "decoded-shape"),
    ],
)
def test_rejected_types_dtypes_and_shapes(value, layout, rule):
    with pytest.raises(DecodedMediaError) as caught:
        check_decoded(value, layout)
    assert caught.value.rule == rule


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), float("-inf")])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_non_finite_values_are_rejected(bad, dtype):
    video = ok_video(dtype=dtype)
    video[0, 1, 2, 3, 4] = bad
    with pytest.raises(DecodedMediaError, match="not finite") as caught:
        check_decoded(video, "video")
    assert caught.value.rule == "decoded-finite"


@pytest.mark.parametrize("extreme", [1.06, -1.06, 2.0, 255.0])
def test_values_materially_outside_the_range_are_rejected(extreme):
    video = ok_video()
    video[0, 0, 0, 0, 0] = extreme
    with pytest.raises(DecodedMediaError, match="outside") as caught:
        check_decoded(video, "video", tolerance=0.05)
    assert caught.value.rule == "decoded-range"


@pytest.mark.parametrize("edge", [1.0, -1.0, 1.04, -1.04])
def test_values_at_or_just_past_the_edge_are_accepted(edge):
    video = ok_video()
    video[0, 2, 3, 7, 7] = edge
    check_decoded(video, "video", tolerance=0.05)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32, torch.float64])
def test_every_floating_dtype_is_accepted(dtype):
    check_decoded(ok_video(dtype=dtype), "video")
    check_decoded(torch.zeros((1, 3, 1, 5, 6), dtype=dtype), "image")


# -- decoders ------------------------------------------------------------------------------------


class Decoder:
    name = "tiny-vae"
    revision = "r1"
    output_range = "neg_one_to_one"

    def __init__(self):
        self.grad_enabled = None

    def decode(self, latent):
        self.grad_enabled = torch.is_grad_enabled()
        return latent * 1.0


def test_decode_runs_without_gradients():
    decoder = Decoder()
    latent = torch.zeros((1, 3, 1, 2, 2), requires_grad=True)
    out = decode(decoder, latent)
    assert decoder.grad_enabled is False and not out.requires_grad


def test_a_good_attestation_is_the_identity():
    assert attest(Decoder()).identity() == {
        "name": "tiny-vae",
        "revision": "r1",
        "output_range": "neg_one_to_one",
    }


def _decoder(**changes):
    decoder = Decoder()
    for name, value in changes.items():
        setattr(decoder, name, value)
    return decoder


class NoDecode:
    name, revision, output_range = "x", "1", "neg_one_to_one"


@pytest.mark.parametrize(
    ("decoder", "match"),
    [
        (None, "no decoder was given"),
        (NoDecode(), "no decode"),
        (_decoder(output_range=None), "must explicitly attest"),
        (_decoder(output_range="zero_to_one"), "must explicitly attest"),
        (_decoder(output_range="[-1, 1]"), "must explicitly attest"),
        (_decoder(name=""), "name"),
        (_decoder(name=None), "name"),
        (_decoder(revision=3), "revision"),
    ],
)
def test_missing_or_wrong_attestations_are_refused(decoder, match):
    with pytest.raises(DecodedMediaError, match=match):
        attest(decoder)
