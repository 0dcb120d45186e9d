"""The bindings read the configuration sections other distributions bring: the test distribution
``tests/seam_plugin`` (installed in env ``bindings``) registers ``rl.seam_watch`` with a batch observer;
``rl.monitor`` belongs to rewardkit-monitor, which env ``bindings`` does not install."""

from __future__ import annotations

import pytest

import rewardkit_bindings.openrlhf as openrlhf_binding
from rewardkit.plugin import MissingExtraError


def test_a_section_brings_its_observer_to_the_bindings() -> None:
    """``rl.seam_watch`` registers an observer with its section: a trainer binding scoring with it set
    hands the observer each scored batch; unset, the binding runs unwatched."""
    from rewardkit_seam_example import SeamObserver  # type: ignore[import-not-found]

    config = {"rl.reward.provider": "exact-match", "rl.data.response_column": "reference"}
    before = len(SeamObserver.seen)
    queries, prompts, labels = ["Q: four", "Q: five"], ["Q:", "Q:"], ["four", "four"]
    totals, _ = openrlhf_binding.score(
        queries, prompts, labels, config={**config, "rl.seam_watch.label": "w"}
    )
    assert totals == [1.0, 0.0]
    assert SeamObserver.seen[before:] == [("w", "openrlhf", 2)]
    openrlhf_binding.score(queries, prompts, labels, config=config)
    assert SeamObserver.seen[before:] == [("w", "openrlhf", 2)]


def test_the_monitors_section_without_its_distribution_is_one_install_line() -> None:
    """``rl.monitor`` is the monitor distribution's section (not installed in this env): set, it is kept
    unchecked and a binding fails naming what to install rather than training unwatched."""
    config = {
        "rl.reward.provider": "exact-match",
        "rl.data.response_column": "reference",
        "rl.monitor.logdir": "m",
    }
    # the install line names folders when the core runs from a checkout, names on an index otherwise
    # (env bindings installs the core from a wheel)
    said = (
        r"^`rl.monitor` needs rewardkit_monitor, which is not installed: "
        r"pip install ('\S*plugins/stats' '\S*plugins/monitor'|'rewardkit-monitor')$"
    )
    with pytest.raises(MissingExtraError, match=said):
        openrlhf_binding.score(["Q: four"], ["Q:"], ["four"], config=config)
