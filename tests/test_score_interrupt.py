"""Ctrl-C during `rewardkit score` on a real terminal: one line naming the exact `--resume`
command, exit code 130; that command then finishes the run with the output of an uninterrupted
one. Also: a data error mid-file names `--resume`, and the progress line on a terminal."""

from __future__ import annotations

import json
import os
import shlex
import signal
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest
from interrupt_fixtures import write_job

from rewardkit.job.score_job import journal_path, manifest_path

HERE = Path(__file__).parent
GROUP_SIZE = 4
GROUPS = 400
COLUMNS = 50  # the terminal's width: narrower than the progress line
CHUNK = 8  # rollouts: two groups a chunk, so the first chunk is journaled long before the end

# `rewardkit score` with small chunks (the command line is the CLI's own; only the chunk size differs)
PROGRAM = (
    "import sys; from rewardkit import score_job; score_job.CHUNK_ROLLOUTS = "
    f"{CHUNK}; from rewardkit.cli import main; sys.exit(main())"
)


def job(tmp_path: Path) -> Path:
    return write_job(tmp_path, groups=GROUPS, group_size=GROUP_SIZE, spread=3)


def environment(sleep: float) -> dict[str, str]:
    path = os.pathsep.join(filter(None, [str(HERE), os.environ.get("PYTHONPATH")]))
    return {**os.environ, "PYTHONPATH": path, "REWARDKIT_TEST_SLEEP": str(sleep)}


def command_line(arguments: list[str]) -> list[str]:
    """``rewardkit ARGS`` run by this interpreter with the small chunks."""
    assert arguments[0] == "rewardkit"
    return [sys.executable, "-c", PROGRAM, *arguments[1:]]


def journaled_chunks(out: Path) -> int:
    try:
        return sum(line.startswith(b'{"chunk":') for line in journal_path(out).read_bytes().splitlines())
    except FileNotFoundError:
        return 0


def read_available(master: int, into: bytearray) -> None:
    import select

    while select.select([master], [], [], 0)[0]:
        try:
            piece = os.read(master, 65536)
        except OSError:  # the other end closed
            return
        if not piece:
            return
        into.extend(piece)


def run_on_a_terminal(arguments: list[str], env: dict[str, str], out: Path) -> tuple[int, str, str, str]:
    """Start ``arguments`` with stdin and stderr on a new pty that is its controlling terminal,
    wait until the journal holds a chunk, type Ctrl-C; returns (exit code, the terminal's output
    before the Ctrl-C, after it, stdout)."""
    import fcntl

    master, slave = os.openpty()
    attributes = termios.tcgetattr(slave)
    attributes[1] &= ~termios.ONLCR  # output as written: "\n" stays "\n"
    attributes[3] &= ~termios.ECHO  # the typed ^C is not echoed
    attributes[3] |= termios.ISIG  # ... but is the terminal's interrupt
    termios.tcsetattr(slave, termios.TCSANOW, attributes)
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, COLUMNS, 0, 0))

    def controlling_terminal() -> None:
        os.setsid()
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)
        # A user's terminal delivers Ctrl-C; a test runner started in the background (`cmd &`
        # in a script) passes SIGINT down ignored, and Python then never turns it into
        # KeyboardInterrupt.
        signal.signal(signal.SIGINT, signal.SIG_DFL)

    process = subprocess.Popen(
        arguments,
        stdin=slave,
        stderr=slave,
        stdout=subprocess.PIPE,
        env=env,
        preexec_fn=controlling_terminal,
    )
    os.close(slave)
    before = bytearray()
    try:
        while journaled_chunks(out) < 1:
            assert process.poll() is None, f"the job ended before it was interrupted: {bytes(before)!r}"
            read_available(master, before)
            time.sleep(0.01)
        read_available(master, before)
        os.write(master, b"\x03")
        after = bytearray()
        stdout = process.stdout.read().decode() if process.stdout else ""
        code = process.wait()
        read_available(master, after)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        os.close(master)
    return code, before.decode(), after.decode(), stdout


def test_ctrl_c_ends_with_one_line_naming_resume_and_resume_finishes_the_run(tmp_path: Path):
    config = job(tmp_path)
    out = tmp_path / "interrupted" / "out.jsonl"
    given = ["rewardkit", "score", str(config), "rl.advantage_eps=0.000001", "--out", str(out)]
    code, before, after, stdout = run_on_a_terminal(command_line(given), environment(0.02), out)
    assert code == 130, (before, after)
    assert "Traceback" not in before + after
    # the progress line was on the terminal: each state exactly one column short of its width,
    # so a shorter state leaves nothing of a longer one and none wraps
    states = before.split("\r")[1:]
    assert states and all(
        state.startswith("scoring ") and "ETA" in state and len(state) == COLUMNS - 1 for state in states
    )
    # the progress line is blanked; what follows it is one line
    message = after.split("\r")[-1]
    assert message.endswith("\n") and message.count("\n") == 1, after
    assert "--resume" in message and "chunks are journaled" in message
    assert stdout == ""
    resume = message.split("finish the run with: ", 1)[1].strip()
    assert shlex.split(resume) == [*given, "--resume"]
    assert json.loads(manifest_path(out).read_text())["status"] == "pending"

    finished = subprocess.run(
        command_line(shlex.split(resume)), env=environment(0), capture_output=True, text=True, timeout=300
    )
    assert finished.returncode == 0, finished.stderr
    assert "chunks were journaled already" in finished.stdout

    reference = tmp_path / "reference" / "out.jsonl"
    uninterrupted = ["rewardkit", "score", str(config), "rl.advantage_eps=0.000001", "--out", str(reference)]
    whole = subprocess.run(
        command_line(uninterrupted), env=environment(0), capture_output=True, text=True, timeout=300
    )
    assert whole.returncode == 0, whole.stderr
    got = [json.loads(line) for line in out.read_text().splitlines()]
    want = [json.loads(line) for line in reference.read_text().splitlines()]
    assert len(want) == GROUPS * GROUP_SIZE and got == want


def test_a_data_error_mid_file_names_resume(tmp_path: Path, capsys: pytest.CaptureFixture):
    config = job(tmp_path)
    rollouts = tmp_path / "rollouts.jsonl"
    lines = rollouts.read_text().splitlines(keepends=True)
    rollouts.write_text("".join([*lines[:20], "{not json\n", *lines[21:]]))
    out = tmp_path / "out.jsonl"
    from rewardkit.cli import main
    from rewardkit.job import score_job

    sys.path.insert(0, str(HERE))
    old, score_job.CHUNK_ROLLOUTS = score_job.CHUNK_ROLLOUTS, CHUNK
    try:
        assert main(["score", str(config), "--out", str(out)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "line 21" in err
        assert "16 rollouts" in err and "fix the file" in err
        assert shlex.join(["rewardkit", "score", str(config), "--out", str(out), "--resume"]) in err
        rollouts.write_text("".join(lines))  # fixed
        assert main(["score", str(config), "--out", str(out), "--resume"]) == 0
        assert "2 of " in capsys.readouterr().out  # the two chunks before the bad line were kept
    finally:
        score_job.CHUNK_ROLLOUTS = old
        sys.path.remove(str(HERE))
