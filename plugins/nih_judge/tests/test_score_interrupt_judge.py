"""Ctrl-C on a terminal during `rewardkit score` with `nih-rubric` against a judge on loopback.

The user types Ctrl-C inside a chunk (whatever chunks were journaled before it): what the judge
already answered in it must be kept, not only whole chunks. The job ends with exit code 130 and
one line naming the exact `--resume` command, with no traceback and no asyncio warning; the
answers of every group the judge had wholly answered are in `<out>.answers`; the `--resume` asks
the judge only about the groups neither journaled nor kept (those in flight at the Ctrl-C are
asked again: the answer journal keeps whole groups) and writes what an uninterrupted run writes.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import select
import shlex
import signal
import struct
import subprocess
import sys
import termios
import time
from collections import Counter
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from rewardkit.job.answer_journal import answers_path
from rewardkit.job.score_job import journal_path, manifest_path
from rewardkit_nih_judge.testing import Reply, ScriptedJudge, graded

GROUPS = 120
GROUP_SIZE = 4
LATENCY_S = 0.05  # per answer: the run takes seconds, so the Ctrl-C lands in its middle
# Judge answers given when the test types Ctrl-C: a quarter of the run, past a first chunk sized
# by time (64 rollouts); with 8 requests in flight (max_concurrency) at most 8 groups are partly
# answered, so whole groups of the chunk being scored are there to keep.
ANSWERED_BEFORE_CTRL_C = 120
NOISE = ("Traceback", "Task was destroyed", "Exception ignored", "Error in atexit", "RuntimeWarning")


def verdict(body: Mapping[str, Any]) -> Reply:
    """A score that depends on the answer, so the output tells candidates apart."""
    answer = graded(body)
    return Reply(json.dumps({"score": len(answer) % 11, "rationale": f"read {answer}"}))


def group_id(g: int) -> str:
    return f"g{g:03d}"


def completions(group: str) -> list[str]:
    """The answers of a group, told apart by their length too."""
    g = int(group[1:])
    return [f"answer {g}.{k}{'!' * k}" for k in range(GROUP_SIZE)]


def job(folder: Path, base_url: str) -> Path:
    rows = [
        {"group_id": group_id(g), "prompt": f"question {g}", "completion": text}
        for g in range(GROUPS)
        for text in completions(group_id(g))
    ]
    (folder / "rollouts.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    config = folder / "judge.yaml"
    config.write_text(
        "rl:\n"
        f"  group_size: {GROUP_SIZE}\n"
        "  data: {rollouts_path: rollouts.jsonl}\n"
        "  reward:\n"
        "    provider: nih-rubric\n"
        "    params:\n"
        f"      base_url: {base_url}\n"
        "      model: stub\n"
        "      rubric: 'Correct final answer: 10 points.'\n"
        "      scale: [0, 10]\n"
    )
    return config


def command_line(arguments: list[str]) -> list[str]:
    """``rewardkit ARGS`` as this interpreter runs the CLI."""
    assert arguments[0] == "rewardkit"
    return [sys.executable, "-m", "rewardkit.cli", *arguments[1:]]


def kept_answers(out: Path) -> list[dict[str, Any]]:
    """The whole entries of the answer journal (not its header, not a line being written)."""
    try:
        raw = answers_path(out).read_bytes()
    except FileNotFoundError:
        return []
    lines = raw.split(b"\n")[1:-1]  # the header; the last piece has no newline yet
    return [json.loads(line) for line in lines]


def journaled_groups(out: Path) -> set[str]:
    """The groups of the chunks whose record is whole in the journal."""
    groups: set[str] = set()
    pending: set[str] = set()
    for line in journal_path(out).read_bytes().splitlines()[1:]:
        row = json.loads(line)
        if "chunk" in row:
            groups |= pending
            pending = set()
        else:
            pending.add(row["group_id"])
    return groups


def read_available(master: int, into: bytearray) -> None:
    while select.select([master], [], [], 0)[0]:
        try:
            piece = os.read(master, 65536)
        except OSError:  # the other end closed
            return
        if not piece:
            return
        into.extend(piece)


def interrupt_on_a_terminal(arguments: list[str], ready: Callable[[], bool]) -> tuple[int, str, str]:
    """Run ``arguments`` with stdin and stderr on a new pty that is its controlling terminal; once
    ``ready()``, type Ctrl-C (the terminal sends SIGINT to the process group). Returns (exit code,
    the terminal's output, stdout)."""
    master, slave = os.openpty()
    attributes = termios.tcgetattr(slave)
    attributes[1] &= ~termios.ONLCR  # output as written
    attributes[3] &= ~termios.ECHO  # the typed ^C is not echoed
    attributes[3] |= termios.ISIG  # ... but is the terminal's interrupt
    termios.tcsetattr(slave, termios.TCSANOW, attributes)
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))

    def controlling_terminal() -> None:
        os.setsid()
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)
        # A test runner started in the background passes SIGINT down ignored; a terminal's user
        # gets the default, which Python turns into KeyboardInterrupt.
        signal.signal(signal.SIGINT, signal.SIG_DFL)

    process = subprocess.Popen(
        arguments, stdin=slave, stderr=slave, stdout=subprocess.PIPE, preexec_fn=controlling_terminal
    )
    os.close(slave)
    terminal = bytearray()
    try:
        while not ready():
            assert process.poll() is None, f"the job ended before it was interrupted: {bytes(terminal)!r}"
            read_available(master, terminal)
            time.sleep(0.01)
        os.write(master, b"\x03")
        stdout = process.stdout.read().decode() if process.stdout else ""
        code = process.wait(timeout=60)
        read_available(master, terminal)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        os.close(master)
    return code, terminal.decode(), stdout


def asked(requests: list[dict[str, Any]]) -> Counter[str]:
    """How often each answer was sent to the judge."""
    return Counter(graded(body) for body in requests)


def without_diagnostics(path: Path) -> list[dict[str, Any]]:
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    for row in rows:
        row.pop("diagnostics", None)
    return rows


def test_ctrl_c_keeps_the_judge_answers_and_resume_does_not_ask_again(tmp_path: Path) -> None:
    with ScriptedJudge(verdict, latency_s=LATENCY_S) as judge:
        config = job(tmp_path, judge.base_url)
        out = tmp_path / "interrupted" / "out.jsonl"
        given = ["rewardkit", "score", str(config), "--out", str(out)]
        code, terminal, stdout = interrupt_on_a_terminal(
            command_line(given), lambda: len(judge.requests) - judge.in_flight >= ANSWERED_BEFORE_CTRL_C
        )
        before = list(judge.requests)

        assert code == 130, terminal
        assert stdout == ""
        assert not any(noise in terminal for noise in NOISE), terminal
        message = terminal.split("\r")[-1]  # after the progress line, blanked
        assert message.count("\n") == 1 and message.endswith("\n"), terminal
        journaled = journaled_groups(out)
        said = re.search(r"interrupted: (\d+) rollouts in \d+ chunks are journaled", message)
        assert said is not None and int(said.group(1)) == len(journaled) * GROUP_SIZE, message
        resume = message.split("finish the run with: ", 1)[1].strip()
        assert shlex.split(resume) == [*given, "--resume"]
        assert json.loads(manifest_path(out).read_text())["status"] == "pending"

        kept_groups = {entry["group"] for entry in kept_answers(out)}
        assert kept_groups and not kept_groups & journaled
        assert f"and {len(kept_groups)} group answers of slow providers" in message, message
        done = kept_groups | journaled
        assert len(done) < GROUPS
        asked_before = asked(before)
        for group in done:  # every candidate of a kept or journaled group was answered, once
            assert [asked_before[text] for text in completions(group)] == [1] * GROUP_SIZE

        judge.reset()
        finished = subprocess.run(
            command_line(shlex.split(resume)), capture_output=True, text=True, timeout=300
        )
        after = list(judge.requests)
        assert finished.returncode == 0, finished.stderr
        assert not any(noise in finished.stderr for noise in NOISE), finished.stderr
        assert not answers_path(out).exists() and not journal_path(out).exists()

        # The resume asked only about the groups neither journaled nor kept, each candidate once.
        asked_after = asked(after)
        assert set(asked_after.values()) == {1}
        assert not {text for group in done for text in completions(group)} & set(asked_after)
        assert len(after) == (GROUPS - len(done)) * GROUP_SIZE
        # In all, the judge was asked the uninterrupted run's questions plus those in flight at the
        # Ctrl-C (answered or not, their group was not whole).
        repeated = sum((asked_before & asked_after).values())
        assert len(before) + len(after) == GROUPS * GROUP_SIZE + repeated

        judge.reset()
        reference = tmp_path / "reference" / "out.jsonl"
        whole = subprocess.run(
            command_line(["rewardkit", "score", str(config), "--out", str(reference)]),
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert whole.returncode == 0, whole.stderr
        assert len(judge.requests) == GROUPS * GROUP_SIZE

    got, want = without_diagnostics(out), without_diagnostics(reference)
    assert len(want) == GROUPS * GROUP_SIZE and got == want
