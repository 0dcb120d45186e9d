"""``rewardkit view`` without a browser: the verbs arrive through the plugin hook, the embedded data is
inert in HTML yet reads back unchanged, bad inputs are named, and the page says what it cut."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

from rewardkit_view.page import embed_json
from view_helpers import README_CONFIG, README_ROLLOUTS, rewardkit, score

HOSTILE = "</script><script>alert(1)</script><!-- ]]> & \u2028\u2029 {{DATA}} <img src=x onerror=alert(2)>"


def test_both_verbs_arrive_through_the_plugin_hook(tmp_path: Path) -> None:
    done = rewardkit("plugins", cwd=tmp_path)
    assert re.search(
        r"^view\s+rewardkit-view \S+\s+loaded\s+register_commands\s+commands: view,compare$",
        done.stdout,
        re.MULTILINE,
    ), done.stdout
    help_text = rewardkit("--help", cwd=tmp_path).stdout
    assert re.search(r"^\s+view\s+write a self-contained HTML page", help_text, re.MULTILINE)
    assert re.search(r"^\s+compare\s+compare two rewards on the same rollouts", help_text, re.MULTILINE)


def test_embedded_json_cannot_close_its_block_and_reads_back_unchanged() -> None:
    embedded = embed_json({"completion": HOSTILE, HOSTILE: [HOSTILE]})
    assert not set("<>&\u2028\u2029") & set(embedded)
    assert json.loads(embedded) == {"completion": HOSTILE, HOSTILE: [HOSTILE]}


def test_the_page_holds_hostile_text_only_inside_its_data_block(tmp_path: Path) -> None:
    results = tmp_path / "results.jsonl"
    row = {
        "group_id": "g",
        "trajectory_id": HOSTILE,
        "final": 1.0,
        "advantage": 0.0,
        "breakdown": {"task": {"status": "scored", "value": 1.0, "reason": HOSTILE}},
        "completion": HOSTILE,
    }
    results.write_text(json.dumps(row) + "\n")
    done = rewardkit("view", str(results), "--out", "page.html", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    page = (tmp_path / "page.html").read_text()
    # two scripts of the page's own (the data block and the code), each closed once
    assert page.count("<script") == 2 and page.count("</script>") == 2
    assert "onerror" not in page.split('id="rewardkit-data">')[0]
    policy = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', page)
    assert policy is not None
    rules = html.unescape(policy.group(1))
    assert "default-src 'none'" in rules and "script-src 'sha256-" in rules and "'unsafe-inline'" not in rules


def test_a_long_completion_is_cut_and_the_page_says_so(tmp_path: Path) -> None:
    results = score(README_CONFIG, README_ROLLOUTS, tmp_path / "results.jsonl")
    done = rewardkit("view", str(results), "--max-text", "20", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    data = (tmp_path / "results.html").read_text().split('id="rewardkit-data">')[1].split("</script>")[0]
    rows = json.loads(data)["rows"]
    assert len(rows) == 48 and all(len(row["x"]) <= 20 for row in rows)
    first = json.loads(results.read_text().splitlines()[0])
    assert rows[0]["n"] == len(first["completion"]) and rows[0]["x"] == first["completion"][:20]


def test_bad_inputs_are_named_with_file_and_line(tmp_path: Path) -> None:
    results = tmp_path / "results.jsonl"
    results.write_text('{"group_id": "g", "trajectory_id": "t", "final": 1, "breakdown": {}}\nnot json\n')
    done = rewardkit("view", str(results), cwd=tmp_path)
    assert done.returncode == 2 and f"{results}:2: not a JSON line" in done.stderr
    results.write_text('{"group_id": "g", "final": 1}\n')
    done = rewardkit("view", str(results), cwd=tmp_path)
    assert f"{results}:1: no trajectory_id, breakdown: is this the --out of `rewardkit score`?" in done.stderr
    done = rewardkit("view", str(tmp_path / "missing.jsonl"), cwd=tmp_path)
    assert done.returncode == 2 and "missing.jsonl: no such file" in done.stderr
    monitor = rewardkit("view", str(README_ROLLOUTS), "--monitor", str(tmp_path), cwd=tmp_path)
    assert monitor.returncode == 2
