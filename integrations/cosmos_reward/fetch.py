"""Fetch and install the Cosmos-RL reward service for the ``cosmos`` tox env (its commands_pre).

``python integrations/cosmos_reward/fetch.py DEST`` downloads the cosmos-rl 0.4.7 source
distribution from the package index (once: an existing unpacked copy in DEST is reused), unpacks
it into DEST and installs its ``reward_service`` folder (``cosmos_rl_reward``) without
dependencies into the running interpreter; the env lists the few dependencies it needs. The test
harness builds its run-time shim from the unpacked files at run time; nothing of cosmos-rl is
copied into this repository.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

VERSION = "0.4.7"


def main(destination: str) -> None:
    root = Path(destination)
    source = root / f"cosmos_rl-{VERSION}"
    if not (source / "reward_service" / "pyproject.toml").exists():
        root.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory() as download:
            subprocess.run(
                [sys.executable, "-m", "pip", "download", f"cosmos-rl=={VERSION}", "--no-deps",
                 "--no-binary", ":all:", "--dest", download, "--quiet"],
                check=True,
            )  # fmt: skip
            (archive,) = Path(download).glob("cosmos_rl-*.tar.gz")
            with tarfile.open(archive) as bundle:
                bundle.extractall(root, filter="data")
    # the sdist has no git metadata for setuptools-scm: state the version
    env = {**os.environ, "SETUPTOOLS_SCM_PRETEND_VERSION": VERSION}
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", str(source / "reward_service")],
        check=True,
        env=env,
    )
    print(source)


if __name__ == "__main__":
    main(sys.argv[1])
