"""Every shell and Python snippet of README.md and docs/*.md runs, or is marked and checked.

The conventions are in ``doc_snippets``' docstring. This file runs the blocks of the documents
routed to the core env and does the static checks of every document; the documents of the other
envs in ``RUNNER_ENVS`` run in their own runner (``rl_pack/tests/test_docs_snippets_rl.py``,
``plugins/service/tests/test_docs_snippets_service.py``,
``plugins/checkpoints/tests/test_docs_snippets_checkpoints.py``).
"""

from __future__ import annotations

import re
import sys
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
    provider_names_in_source,
    run_block,
    run_checked,
    runnable,
    scratch,
    shell_commands,
)

BLOCKS = all_blocks()


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


@pytest.mark.parametrize(
    "line",
    [
        "pip install . ./plugins/service[server]",
        "pip install . ./plugins/stats './plugins/checkpoints[plot]' ./plugins/ray",
        "pip install . ./plugins/media ./plugins/dancegrpo_video ./plugins/t2i_image",
        "pip install ./plugins/service    # a client only",
        "pip install 'rewardkit-core[service,ray,checkpoints,media]'",
        "pip install rewardkit-service 'rewardkit-checkpoints[plot]'",
        "python -m pip install 'tox>=4.10'",
    ],
)
def test_install_lines_the_docs_may_use(line: str):
    assert check_shell(line) == []


@pytest.mark.parametrize(
    "line, problem",
    [
        ("pip install 'rewardkit[service]'", "rewardkit is not ours (PyPI treats it as `reward-kit`"),
        ("pip install rewardkit", "the core's distribution is rewardkit-core"),
        ("pip install '.[service]'", "installs rewardkit-service from an index; from a checkout install its"),
        ("pip install . ./plugins/service[client]", "no extra 'client' in ./plugins/service"),
        ("pip install 'rewardkit-core[server]'", "no extra 'server' in rewardkit-core"),
        ("pip install . ./plugins/dancegrpo_video", "rewardkit-dancegrpo needs rewardkit-media"),
        ("pip install ./plugins/nope", "./plugins/nope is not a distribution folder"),
    ],
)
def test_install_lines_the_checks_refuse(line: str, problem: str):
    problems = check_shell(line)
    assert any(problem in found for found in problems), problems


@pytest.mark.parametrize("checkout", [True, False], ids=["checkout", "index"])
def test_the_install_hints_the_core_prints_pass_the_check(monkeypatch: pytest.MonkeyPatch, checkout: bool):
    """What `rewardkit serve` and friends print when a distribution is missing is a valid install."""
    from rewardkit.seam import extras

    monkeypatch.chdir(ROOT)
    if not checkout:
        monkeypatch.setattr(extras, "_checkout", lambda: None)
    for distribution, extra in {(d, e) for d, e in extras.MODULES.values()} | {
        (d, None) for d in extras.DISTRIBUTIONS
    }:
        line = extras.install_line(distribution, extra)
        assert line.startswith("pip install ") and check_shell(line) == [], line


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


@pytest.mark.parametrize(
    "block", [b for b in BLOCKS if runnable(b) and DOC_ENVS.get(b.doc) == "core"], ids=ids
)
def test_core_blocks_run(block: Block, tmp_path: Path):
    run_checked(block, tmp_path)


def test_the_runner_uses_this_interpreter(tmp_path: Path):
    block = Block("x.md", 1, "bash", "python -c 'import sys; print(sys.executable)'\n", None, "")
    assert Path(run_block(block, scratch(tmp_path)).stdout.strip()) == Path(sys.executable)
