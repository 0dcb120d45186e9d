"""Every shell and Python snippet of README.md and docs/*.md runs, or is marked and checked.

The conventions are in ``doc_snippets``' docstring. This file runs the blocks of the documents
routed to the core env and does the static checks of every document; the rl pack's documents run
in ``rl_pack/tests/test_docs_snippets_rl.py``.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from doc_snippets import (
    DOC_ENVS,
    ROOT,
    RUN_LANGS,
    RUNNER_ENVS,
    Block,
    all_blocks,
    check_python,
    check_shell,
    documents,
    environment,
    provider_names_in_source,
    run_block,
    runnable,
    scratch,
    shell_commands,
)

BLOCKS = all_blocks()
SERVICE = "127.0.0.1:8000"


def ids(block: Block) -> str:
    return block.where


def test_every_document_is_routed_to_an_env():
    unrouted = [doc for doc in documents() if doc not in DOC_ENVS]
    assert not unrouted, f"add these to doc_snippets.DOC_ENVS (the tox env their snippets need): {unrouted}"


def test_runnable_blocks_are_in_an_env_that_runs_them():
    stranded = [b.where for b in BLOCKS if runnable(b) and DOC_ENVS.get(b.doc) not in RUNNER_ENVS]
    assert not stranded, (
        f"runnable blocks in documents whose env has no snippet runner ({RUNNER_ENVS}): mark them "
        f"`<!-- doc-test: skip REASON -->` or add a runner in that env: {stranded}"
    )


def test_markers_sit_on_blocks_that_know_them():
    wrong = [b.where for b in BLOCKS if b.marker == "skip" and b.lang not in RUN_LANGS]
    wrong += [b.where for b in BLOCKS if b.marker and not b.argument]
    assert not wrong, f"a skip marker needs a reason and a bash/sh/console/python block: {wrong}"


def test_unlabelled_blocks_are_not_commands():
    """A command in an untagged block would escape these tests: tag it bash or console."""
    looks_like = re.compile(r"^(\$ |python |rewardkit |pip |tox|curl |pytest )", re.MULTILINE)
    untagged = [b.where for b in BLOCKS if not b.lang and looks_like.search(b.text)]
    assert not untagged, f"tag these blocks bash or console (and mark them if they must not run): {untagged}"


@pytest.mark.parametrize("block", [b for b in BLOCKS if b.marker == "file"], ids=ids)
def test_included_blocks_equal_their_files(block: Block):
    path = ROOT / block.argument
    assert path.is_file(), f"{block.where}: {block.argument} does not exist"
    assert block.text == path.read_text(), f"{block.where} differs from {block.argument}: copy it again"


@pytest.mark.parametrize("block", [b for b in BLOCKS if b.marker == "skip" and b.lang != "python"], ids=ids)
def test_skipped_shell_commands_exist(block: Block):
    problems = check_shell(shell_commands(block))
    assert not problems, f"{block.where} ({block.argument}):\n" + "\n".join(problems)


@pytest.mark.parametrize("block", [b for b in BLOCKS if b.lang == "python"], ids=ids)
def test_python_blocks_parse_and_import_what_exists(block: Block):
    problems = check_python(block)
    assert not problems, f"{block.where}:\n" + "\n".join(problems)


def test_yaml_blocks_name_providers_that_exist():
    known = provider_names_in_source()
    unknown = [
        f"{b.where}: {name}"
        for b in BLOCKS
        if b.lang in ("yaml", "toml")
        for name in re.findall(r"provider[\"']?\s*[:=]\s*[\"']?([\w.-]+)", b.text)
        if name not in known
    ]
    assert not unknown, f"providers that no distribution or example defines: {unknown}"


@contextmanager
def service_for(doc: str, cwd: Path) -> Iterator[str]:
    """Start the document's own `rewardkit serve` line on a free loopback port; yield host:port."""
    lines = [
        line.split("#")[0].strip()
        for b in BLOCKS
        if b.doc == doc
        for line in shell_commands(b).splitlines()
        if line.startswith("rewardkit serve ")
    ]
    assert len(lines) == 1, f"{doc}: a curl snippet needs exactly one `rewardkit serve` line, found {lines}"
    command = lines[0].replace("--port 8000", "--port 0").split()
    server = subprocess.Popen(
        command, cwd=cwd, env=environment(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    seen = []
    try:
        assert server.stdout is not None
        deadline = time.monotonic() + 120
        address = None
        while address is None and time.monotonic() < deadline:
            line = server.stdout.readline()
            if not line and server.poll() is not None:
                break
            seen.append(line)
            found = re.search(r"listening on http://(127\.0\.0\.1:\d+)", line)
            address = found.group(1) if found else None
        assert address, f"{doc}: `{' '.join(command)}` did not start:\n{''.join(seen)}"
        yield address
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def run_checked(block: Block, tmp_path: Path) -> str:
    cwd = scratch(tmp_path)
    if SERVICE in block.text and "curl" in block.text:
        with service_for(block.doc, cwd) as address:
            moved = Block(block.doc, block.line, block.lang, block.text.replace(SERVICE, address), None, "")
            done = run_block(moved, cwd)
        assert done.returncode == 0, f"{block.where} failed:\n{done.stdout}\n{done.stderr}"
        answer = json.loads(done.stdout)
        assert "error" not in answer, f"{block.where}: the service answered an error: {answer}"
        return done.stdout
    done = run_block(block, cwd)
    assert done.returncode == 0, (
        f"{block.where} failed (exit {done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    )
    return done.stdout


@pytest.mark.parametrize(
    "block", [b for b in BLOCKS if runnable(b) and DOC_ENVS.get(b.doc) == "core"], ids=ids
)
def test_core_blocks_run(block: Block, tmp_path: Path):
    run_checked(block, tmp_path)


def test_the_runner_uses_this_interpreter(tmp_path: Path):
    block = Block("x.md", 1, "bash", "python -c 'import sys; print(sys.executable)'\n", None, "")
    assert Path(run_block(block, scratch(tmp_path)).stdout.strip()) == Path(sys.executable)
