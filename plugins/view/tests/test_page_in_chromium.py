"""The page of ``rewardkit view`` in a real headless Chromium: the README example's results (with
hostile completions planted among them) load with no console error, the filters change the visible
rows, the group view opens, a planted script does not run, and 100,000 candidates stay usable.

The page is written by the real ``rewardkit score`` and ``rewardkit view`` commands; the browser is
Debian's ``chromium`` (``browser.py``)."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path

from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support.ui import Select
from selenium.webdriver.support.wait import WebDriverWait
from view_browser import chromium, console_errors, open_page
from view_helpers import (
    LENIENT,
    README_CONFIG,
    expected,
    plant_hedges,
    readme_rollouts,
    rewardkit,
    score,
    write_rollouts,
)

HERE = Path(__file__).parent
AUDIT = HERE / "data" / "audit_gsm8k_last_number.json"
# A completion is written by an adversary: each of these would change the title or set a global if
# any markup from the data ran (a script, an event handler, a break out of the embedded JSON).
SCRIPT = '<script>window.pwned = "script"; document.title = "pwned"</script> A: 3'
IMAGE = "<img src=x onerror=\"window.pwned = 'img'; document.title = 'pwned'\"> A: 3"
BREAKOUT = "</script><script>window.pwned = 'breakout'</script>{{SCRIPT}}\u2028<!-- A: 7"
HOSTILE = {
    "gsm8k-test-0001/6b_verification": SCRIPT,
    "gsm8k-test-0001/175b_finetuning": IMAGE,
    "gsm8k-test-0002/6b_finetuning": BREAKOUT,
}
SCREENSHOT = "rewardkit-view.png"


def visible_trajectories(driver: WebDriver) -> list[str]:
    # read in one script: the table may be re-rendered between two element look-ups
    shown = driver.execute_script(
        "return Array.from(document.querySelectorAll('#candidates-body tr'), (row) => row.dataset.trajectory)"
    )
    return [str(trajectory) for trajectory in shown]


def write_monitor_log(folder: Path) -> Path:
    """A monitor log as ``rl.monitor`` writes it (docs/monitor.md): one step per line, an alarm at 57."""
    folder.mkdir()
    lines = []
    for step in range(80):
        hacked = step >= 50
        signals = {
            "reward_mean": 0.5 + 0.01 * step,
            "length_coupling": 0.6 if hacked else -0.4 + 0.01 * (step % 3),
        }
        alarms = [{"signal": "length_coupling", "step": 57, "began": 51, "evidence": "CUSUM 12 > 8"}] * (
            step == 57
        )
        lines.append(
            json.dumps(
                {
                    "step": step,
                    "source": "trl",
                    "rollouts": 64,
                    "groups": 16,
                    "signals": signals,
                    "alarms": alarms,
                }
            )
        )
    (folder / "monitor.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder


def test_the_readme_page_filters_opens_groups_and_runs_no_planted_script(tmp_path: Path) -> None:
    rollouts = readme_rollouts()
    for row in rollouts:
        row["completion"] = HOSTILE.get(row["trajectory_id"], row["completion"])
    results = score(
        README_CONFIG, write_rollouts(tmp_path / "rollouts.jsonl", rollouts), tmp_path / "results.jsonl"
    )
    scored = [json.loads(line) for line in results.read_text().splitlines()]
    monitor = write_monitor_log(tmp_path / "monitor")
    done = rewardkit("view", str(results), "--audit", str(AUDIT), "--monitor", str(monitor), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    page = tmp_path / "results.html"

    with chromium() as driver:
        open_page(driver, page)
        assert console_errors(driver) == []
        # nothing planted ran: no global, the title is the page's own, and the text shows as text
        assert driver.execute_script("return window.pwned === undefined") is True
        assert driver.title == "rewardkit view: results.jsonl"
        body = driver.find_element(By.ID, "candidates-body").text
        assert (
            "<script>window.pwned" in body and "<img src=x onerror=" in body and "</script><script>" in body
        )
        assert driver.find_element(By.ID, "totals").text == "48 candidates in 12 groups"
        assert len(visible_trajectories(driver)) == 48  # one page holds them all

        # the text filter: the candidates of one model, as the results say
        search = driver.find_element(By.ID, "filter-text")
        search.send_keys("/6b_finetuning")
        expected = [row["trajectory_id"] for row in scored if row["trajectory_id"].endswith("/6b_finetuning")]
        _wait_for(driver, lambda: visible_trajectories(driver) == expected)
        search.send_keys(Keys.CONTROL, "a")
        search.send_keys(Keys.BACKSPACE)  # as a user empties it (clear() sends no input event)
        _wait_for(driver, lambda: len(visible_trajectories(driver)) == 48)

        # sorting by final, highest first: the paid candidates lead
        Select(driver.find_element(By.ID, "sort")).select_by_value("final-desc")
        paid = sum(row["final"] > 0 for row in scored)
        shown = visible_trajectories(driver)
        finals = {row["trajectory_id"]: row["final"] for row in scored}
        assert [finals[trajectory] > 0 for trajectory in shown] == [True] * paid + [False] * (48 - paid)

        # the status filter: no candidate of the README example was skipped or errored
        Select(driver.find_element(By.ID, "filter-status")).select_by_value("error")
        assert visible_trajectories(driver) == []
        assert "Showing none of 0 matching · 48 candidates" in driver.find_element(By.ID, "paging-note").text
        Select(driver.find_element(By.ID, "filter-status")).select_by_value("scored")
        assert len(visible_trajectories(driver)) == 48

        # the group view: a group's candidates side by side with their advantages
        assert driver.find_element(By.ID, "group-view").is_displayed() is False
        driver.find_element(By.CSS_SELECTOR, "#candidates-body button.group-link[data-group='3']").click()
        assert driver.find_element(By.ID, "group-view").is_displayed()
        cards = driver.find_elements(By.CSS_SELECTOR, "#group-cards .card")
        members = [row for row in scored if row["group_id"] == "gsm8k-test-0003"]
        assert [card.get_attribute("data-trajectory") for card in cards] == [
            row["trajectory_id"] for row in members
        ]
        for card, row in zip(cards, members):
            assert f"advantage {row['advantage']:.4f}" in card.text

        # the audit's leaks and the monitor's alarm are on the page
        audit = driver.find_element(By.ID, "audit").text
        assert "answer-unmarked-list-right-last: leaks" in audit
        assert "It is either 17 or 18." in audit  # the attack's text, as the audit's --json holds it
        monitor_text = driver.find_element(By.ID, "monitor").text
        assert "alarm on length_coupling at step 57 (change began at step 51)" in monitor_text
        assert len(driver.find_elements(By.CSS_SELECTOR, "#monitor .alarm-mark")) == 1

        assert driver.execute_script("return window.pwned === undefined") is True
        assert console_errors(driver) == []
        driver.set_window_size(1400, 2200)  # the summary and the first rows of the table
        driver.execute_script("window.scrollTo(0, 0)")
        screenshot = tmp_path / SCREENSHOT
        assert driver.save_screenshot(str(screenshot))
    assert screenshot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # to look at it (docs/images/viewing.png is made this way): REWARDKIT_VIEW_SCREENSHOT=path
    if os.environ.get("REWARDKIT_VIEW_SCREENSHOT"):
        shutil.copy(screenshot, os.environ["REWARDKIT_VIEW_SCREENSHOT"])


def _wait_for(driver: WebDriver, condition: Callable[[], bool], seconds: float = 10.0) -> None:
    # the search box applies its filter a moment after the last key
    WebDriverWait(driver, seconds).until(lambda _: condition())


def test_a_hundred_thousand_candidates_stay_usable(tmp_path: Path) -> None:
    groups, size = 25_000, 4
    results = tmp_path / "big.jsonl"
    with results.open("w", encoding="utf-8") as out:
        for group in range(groups):
            for member in range(size):
                final = float(member == group % size)
                out.write(
                    json.dumps(
                        {
                            "group_id": f"g{group}",
                            "trajectory_id": f"g{group}/{member}",
                            "final": final,
                            "advantage": 1.5 if final else -0.5,
                            "gated": False,
                            "breakdown": {"task": {"status": "scored", "value": final, "reason": None}},
                            "diagnostics": {},
                            "completion": f"completion {group} {member} answer {group * 7}",
                        }
                    )
                    + "\n"
                )
    done = rewardkit("view", str(results), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    with chromium() as driver:
        open_page(driver, tmp_path / "big.html")
        assert console_errors(driver) == []
        assert driver.find_element(By.ID, "totals").text == "100,000 candidates in 25,000 groups"
        note = driver.find_element(By.ID, "paging-note").text
        assert (
            "Showing 1–50 of 100,000 matching · 100,000 candidates" in note
            and "client-side pagination" in note
        )
        assert driver.find_element(By.ID, "page-label").text == "page 1 of 2000"
        first = visible_trajectories(driver)
        driver.find_element(By.ID, "page-next").click()
        second = visible_trajectories(driver)
        assert len(first) == len(second) == 50 and first[-1] == "g12/1" and second[0] == "g12/2"
        driver.find_element(By.ID, "filter-text").send_keys(
            "answer 174993"
        )  # the last group's number: one group
        _wait_for(driver, lambda: visible_trajectories(driver) == [f"g24999/{member}" for member in range(4)])


def test_the_comparison_page_lists_the_hedges_only_the_lenient_reward_pays(tmp_path: Path) -> None:
    rows = plant_hedges(readme_rollouts())
    rollouts = write_rollouts(tmp_path / "rollouts.jsonl", rows)
    command = ("compare", str(README_CONFIG), str(README_CONFIG), str(rollouts), "--set-b", LENIENT)
    done = rewardkit(*command, "--html", "comparison.html", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    want = expected(rows)
    with chromium() as driver:
        open_page(driver, tmp_path / "comparison.html")
        assert console_errors(driver) == []
        paid = driver.find_elements(By.CSS_SELECTOR, "table.paid-by-one tbody tr")
        assert [row.find_elements(By.TAG_NAME, "td")[2].text for row in paid] == want["only_b_pays"]
        assert all(row.find_elements(By.TAG_NAME, "td")[0].text == "B only" for row in paid)
        flips = driver.find_elements(By.CSS_SELECTOR, "table.flips tbody tr")
        assert sorted(row.find_element(By.TAG_NAME, "button").text for row in flips) == want["flipped_groups"]
        flips[0].find_element(By.TAG_NAME, "button").click()
        assert "under A: final" in driver.find_element(By.ID, "group-cards").text
