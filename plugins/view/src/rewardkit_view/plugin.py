"""rewardkit-view's plugin (entry point ``view``): the ``rewardkit view`` and ``rewardkit compare`` verbs.
Light to import: the page and the comparison load when a verb runs."""

from __future__ import annotations

from rewardkit.plugin import CommandRegistrar, hookimpl


@hookimpl
def register_commands(cli: CommandRegistrar) -> None:
    view = cli.add(
        "view",
        "rewardkit_view.cli:run_view",
        about="write a self-contained HTML page of scored results (docs/viewing.md)",
        description="Write one HTML file (no network, no server; opens from disk) showing the results of "
        "`rewardkit score`: the summary, a histogram per component, every candidate with filters, sorting "
        "and a group view; with --audit and --monitor also the audit's findings and the monitor's signals.",
        show_defaults=True,
    )
    view.add_argument(
        "results", help="the --out of `rewardkit score` (its run manifest is read from beside it)"
    )
    view.add_argument("--out", help="where to write the page (default: RESULTS with .html)")
    view.add_argument("--audit", metavar="AUDIT_JSON", help="the file `rewardkit audit --json` wrote")
    view.add_argument("--monitor", metavar="LOGDIR", help="a run's rl.monitor.logdir (holds monitor.jsonl)")
    view.add_argument(
        "--max-text", type=int, default=4000, help="characters of each completion embedded in the page"
    )

    compare = cli.add(
        "compare",
        "rewardkit_view.cli:run_compare",
        about="compare two rewards on the same rollouts: changed rewards, flipped advantages "
        "(docs/viewing.md)",
        description="Compare two rewards on the same rollouts. A and B are configurations (scored here on "
        "ROLLOUTS by `rewardkit score`) or results files of the same rollouts. Prints both sides' "
        "provenance, the agreement per component and on the final reward, the candidates whose reward "
        "changed, the groups where an advantage changed sign and the candidates only one reward pays. "
        "Exit 0 when it ran, whatever the differences.",
        show_defaults=True,
    )
    compare.add_argument("a", metavar="A", help="configuration (.yaml/.yml/.toml) or results file")
    compare.add_argument("b", metavar="B", help="configuration (.yaml/.yml/.toml) or results file")
    compare.add_argument(
        "rollouts", metavar="ROLLOUTS", nargs="?", help="rollouts to score configurations on"
    )
    compare.add_argument(
        "--set-a", action="append", default=[], metavar="key=value", help="override in A's configuration"
    )
    compare.add_argument(
        "--set-b", action="append", default=[], metavar="key=value", help="override in B's configuration"
    )
    compare.add_argument("--html", metavar="OUT", help="also write the comparison as a page")
    compare.add_argument("--json", metavar="OUT", help="also write the comparison as JSON")
    compare.add_argument("--limit", type=int, default=20, help="rows printed per list")
    compare.add_argument(
        "--max-text", type=int, default=4000, help="with --html: characters of each completion"
    )
