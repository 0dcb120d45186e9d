"""The PNG of ``rewardkit monitor LOGDIR --plot FILE``: the signals over steps, alarms marked."""

from __future__ import annotations

from pathlib import Path

from rewardkit.plugin import RewardkitError, install_line
from rewardkit_monitor.report import MonitorLog

# One panel each, top to bottom: what the run optimised and what it should have, the length, then
# the two alarmed signals. Each panel's note says why a signal can be missing.
PANELS: tuple[tuple[str, tuple[str, ...], str, str], ...] = (
    ("reward", ("reward_mean", "reference_mean"), "step mean", "no reward logged"),
    ("length", ("length_mean",), "tokens (or words)", "no length logged"),
    (
        "divergence",
        ("divergence",),
        "discordant pairs",
        "not computed: rl.monitor.reference is off",
    ),
    (
        "length_coupling",
        ("length_coupling",),
        "corr(reward, length)",
        "undefined: no group had two rewards and two lengths (or the batches have no groups)",
    ),
)
COLOURS = {"reward_mean": "tab:blue", "reference_mean": "tab:green", "length_mean": "tab:purple"}


def plot_log(log: MonitorLog, path: str | Path) -> Path:
    """Write the PNG; every alarm is a red vertical line in every panel (solid in its own signal's,
    whose title names it), the span from the step its change began to the alarm shaded (needs
    matplotlib)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as error:
        raise RewardkitError(
            f"--plot needs matplotlib: {install_line('rewardkit-monitor', 'plot')}"
        ) from error
    figure, axes = plt.subplots(len(PANELS), 1, figsize=(9, 2.3 * len(PANELS)), dpi=100, sharex=True)
    first, last = log.steps[0]["step"], log.steps[-1]["step"]
    for ax, (title, signals, ylabel, missing) in zip(axes, PANELS):
        drawn = False
        for name in signals:
            steps, values = log.series(name)
            if steps:
                ax.plot(steps, values, linewidth=1.2, color=COLOURS.get(name, "tab:blue"), label=name)
                drawn = True
        if title == "length_coupling" and drawn:
            ax.axhline(0.0, color="grey", linewidth=0.8, linestyle=":")
        if not drawn:
            ax.text(0.5, 0.5, missing, transform=ax.transAxes, ha="center", va="center", color="grey")
            ax.set_yticks([])
        own_alarms = [alarm for alarm in log.alarms if alarm["signal"] == title]
        for alarm in log.alarms:
            own = alarm in own_alarms
            shade = 0.15 if own else 0.05
            ax.axvspan(alarm["began"], alarm["step"], color="tab:red", alpha=shade, linewidth=0)
            style = {"linewidth": 1.6, "linestyle": "-"} if own else {"linewidth": 0.8, "linestyle": "--"}
            ax.axvline(alarm["step"], color="tab:red", **style)
        heading = title
        if own_alarms:
            alarm = own_alarms[0]
            heading += f": ALARM at step {alarm['step']} (change began about step {alarm['began']})"
        ax.set_title(heading, loc="left", fontsize="medium", color="tab:red" if own_alarms else "black")
        ax.set_ylabel(ylabel)
        ax.grid(alpha=0.3)
        if drawn and len(signals) > 1:
            ax.legend(loc="best", fontsize="small")
    axes[-1].set_xlabel("training step")
    axes[-1].set_xlim(first, max(last, first + 1))
    verdict = f"{len(log.alarms)} alarm(s)" if log.alarms else "no alarm"
    figure.suptitle(f"reward monitor: {log.label}, {len(log.steps)} steps, {verdict}")
    figure.tight_layout()
    figure.savefig(path, format="png")
    plt.close(figure)
    return Path(path)
