"""The ``rewardkit`` command line."""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import sys
from collections.abc import Callable, Sequence
from typing import Any

from rewardkit.catalog import installed_providers, resolve_catalog, serving_strategies, trainer_bindings
from rewardkit.errors import RewardkitError
from rewardkit.extras import import_optional, install_line, missing_extra
from rewardkit.plugins import load_plugins
from rewardkit.tables import format_table

Command = Callable[[argparse.Namespace], int]
_COMMANDS: dict[str, Command] = {}


def command(name: str) -> Callable[[Command], Command]:
    def decorate(function: Command) -> Command:
        _COMMANDS[name] = function
        return function

    return decorate


def _print_rows(
    args: argparse.Namespace, rows: list[dict[str, Any]], table: list[Any], headers: Sequence[str]
) -> int:
    """``rows`` as JSON under ``--json``, else ``table`` (one tuple of cells per row) under ``headers``."""
    print(json.dumps(rows, indent=2) if args.json else format_table(table, headers))
    return 0


@command("providers")
def cmd_providers(args: argparse.Namespace) -> int:
    rows = [entry.describe() for entry in resolve_catalog(args.catalog).entries()]
    table = [
        (
            row["name"],
            f"{row['distribution']} {row['version']}",
            row["revision"],
            row["identity"][:16],
            ",".join(row["needs"]) or "-",
            ",".join(row["terms"]),
            _about(row),
        )
        for row in rows
    ]
    headers = ("name", "distribution", "revision", "identity", "needs", "terms", "description")
    return _print_rows(args, rows, table, headers)


# The table keeps one line per provider; `rewardkit show NAME` and --json give the whole description.
_DESCRIPTION_WIDTH = 60


def _about(row: dict[str, Any]) -> str:
    """A provider's description cell, led by what is missing to score with it (``needs <extra>``)."""
    text = str(row.get("description") or "").splitlines()[0:1]
    about = text[0] if text else "-"
    if len(about) > _DESCRIPTION_WIDTH:
        about = about[: _DESCRIPTION_WIDTH - 1].rstrip() + "…"
    missing = row.get("missing_modules") or []
    if missing:
        about = f"needs {row['extra']} ({', '.join(missing)} not installed); {about}"
    return about


@command("show")
def cmd_show(args: argparse.Namespace) -> int:
    row = resolve_catalog(args.catalog).entry(args.name).describe()
    if args.json:
        print(json.dumps(row, indent=2))
        return 0
    params = row.pop("params")
    width = max(len(key) for key in row)
    for key, value in row.items():
        if isinstance(value, (list, dict)) or value is None:
            value = json.dumps(value)
        print(f"{key.ljust(width)}  {value}")
    if params is None:
        print(f"{'params'.ljust(width)}  (no schema: the factory takes **kwargs and checks them itself)")
        return 0
    print(f"{'params'.ljust(width)}  {'(none)' if not params else ''}".rstrip())
    for name, about in params.items():
        default = f", default {json.dumps(about['default'])}" if "default" in about else ", required"
        only = f"; operator-only ({about['operator_only']})" if "operator_only" in about else ""
        print(f"  {name}: {about['expects']}{default}{only}")
    return 0


@command("plugins")
def cmd_plugins(args: argparse.Namespace) -> int:
    manager = load_plugins()
    # For each plugin name: the providers, serving strategies and bindings it registered. Built before
    # ``describe`` so that registrations refused while building them are listed.
    contributions: dict[str, dict[str, list[str]]] = {}
    registries = (("providers", installed_providers()), ("serving", serving_strategies()))
    for kind, registry in (*registries, ("bindings", trainer_bindings())):
        for entry in registry:
            contributions.setdefault(entry.owner.name, {}).setdefault(kind, []).append(entry.name)
    rows = manager.describe()
    for row in rows:
        row["provides"] = contributions.get(str(row["name"]), {})
    table = [
        (
            row["name"],
            f"{row['distribution']} {row['version']}",
            row["status"],
            row.get("error") or "; ".join(row.get("refused", [])) or ",".join(row["hooks"]),
            "; ".join(f"{kind}: {','.join(names)}" for kind, names in row["provides"].items()) or "-",
        )
        for row in rows
    ]
    return _print_rows(args, rows, table, ("plugin", "distribution", "status", "hooks / error", "provides"))


@command("serving")
def cmd_serving(args: argparse.Namespace) -> int:
    rows = [
        {
            "name": entry.name,
            "distribution": entry.owner.distribution,
            "version": entry.owner.version,
            "plugin": entry.owner.name,
            "description": entry.value.description,
        }
        for entry in serving_strategies()  # sorted by name
    ]
    table = [(row["name"], f"{row['distribution']} {row['version']}", row["description"]) for row in rows]
    return _print_rows(args, rows, table, ("strategy", "distribution", "description"))


@command("bindings")
def cmd_bindings(args: argparse.Namespace) -> int:
    from rewardkit.bindings import describe

    rows = describe()
    table = [
        (row["name"], f"{row['distribution']} {row['version']}", row["target"], row["description"])
        for row in rows
    ]
    return _print_rows(args, rows, table, ("binding", "distribution", "target", "description"))


@command("score")
def cmd_score(args: argparse.Namespace) -> int:
    from rewardkit.score_job import run_score

    return run_score(
        args.config,
        args.overrides,
        args.out,
        resume=args.resume,
        overwrite=args.overwrite,
        allow_code_change=args.allow_code_change,
        allow_all_errored=args.allow_all_errored,
        plot=args.plot,
    )


def _lazy_command(name: str, module: str, extra: str | None = None) -> None:
    """Register ``name`` as ``module.run_<name>``, imported only when it runs: the verb lives in its own
    distribution (the core imports none). Its options are declared in ``build_parser`` so ``--help``
    works in every install; a missing distribution is one line saying how to install it."""

    def run(args: argparse.Namespace) -> int:
        return int(import_optional(module, f"run_{name}", f"`rewardkit {name}`", extra=extra)(args))

    _COMMANDS[name] = run


_lazy_command("serve", "rewardkit_service.cli", extra="server")
_lazy_command("audit", "rewardkit_audit.cli")
_lazy_command("checkpoints", "rewardkit_checkpoints.cli")
_lazy_command("monitor", "rewardkit_monitor.cli")


class _DefaultsFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """argparse's "(default: ...)" after each option's help, except where the default is ``None``
    (the help text says what happens then) or the help already states it."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        if action.default is None or "(default:" in (action.help or ""):
            return action.help
        return super()._get_help_string(action)


SERVER_INSTALL = install_line("rewardkit-service", "server")
SERVE_MAX_BODY_HELP = "largest request body accepted (default: 67108864, 64 MiB)"


def _version() -> str:
    try:
        return importlib.metadata.version("rewardkit-core")
    except importlib.metadata.PackageNotFoundError:  # run from a source tree that is not installed
        return "(not installed)"


class _Parser(argparse.ArgumentParser):
    """argparse, but ``key=value`` overrides may come anywhere on the command line (after ``--out``
    too), in the order given, for every command that takes overrides."""

    def parse_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> argparse.Namespace:
        parsed, extras = self.parse_known_args(args, namespace)
        overrides: list[str] | None = getattr(parsed, "overrides", None)
        # A word with "=" that is not an option is a ``key=value`` override.
        stray = [arg for arg in extras if overrides is None or "=" not in arg or arg.startswith("-")]
        if stray:
            self.error(f"unrecognized arguments: {' '.join(stray)}")
        if extras and overrides is not None:
            parsed.overrides = [*overrides, *extras]
        return parsed


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="rewardkit", description="The reward layer for RL post-training.")
    parser.add_argument("--version", action="version", version=f"rewardkit {_version()}")
    sub = parser.add_subparsers(dest="command", required=True)

    providers = sub.add_parser("providers", help="list installed reward providers")
    providers.add_argument("--json", action="store_true", help="print a JSON list")
    providers.add_argument("--catalog", help="also list a catalog (name or package.module:factory)")

    show = sub.add_parser("show", help="show one provider")
    show.add_argument("name")
    show.add_argument("--json", action="store_true")
    show.add_argument("--catalog", help="catalog name or package.module:factory")

    for name, about in (
        ("plugins", "list loaded plugins, their hooks and load failures"),
        ("serving", "list installed checkpoint serving strategies"),
        ("bindings", "list trainer bindings and the import path each trainer is given"),
    ):
        sub.add_parser(name, help=about).add_argument("--json", action="store_true")

    checkpoints = sub.add_parser("checkpoints", help="evaluate checkpoints as a model trains")
    checkpoints.add_argument("action", choices=("watch", "curve"))
    checkpoints.add_argument(
        "target", help="watch: a configuration with a checkpoints section; curve: its log_dir"
    )
    checkpoints.add_argument(
        "overrides", nargs="*", metavar="key=value", help="configuration overrides (watch)"
    )
    checkpoints.add_argument("--once", action="store_true", help="watch: one scan, then exit")
    checkpoints.add_argument("--timeout", type=float, help="watch: stop scanning after this many seconds")
    checkpoints.add_argument("--plot", help="curve: write a PNG plot here (needs matplotlib)")
    checkpoints.add_argument("--json", action="store_true", help="curve: print JSON rows")

    score = sub.add_parser("score", help="score a JSONL file of rollouts (the main job)")
    score.add_argument("config", help="YAML or TOML configuration")
    score.add_argument("overrides", nargs="*", metavar="key=value", help="configuration overrides")
    score.add_argument("--out", required=True, help="where to write one JSON line per candidate")
    score.add_argument(
        "--resume",
        action="store_true",
        help="finish a pending run under its recorded identities, scoring only what is not journaled",
    )
    score.add_argument(
        "--overwrite", action="store_true", help="discard a pending run at --out and start over"
    )
    score.add_argument(
        "--allow-code-change",
        action="store_true",
        help="with --resume: finish even though a provider's code changed without a revision bump "
        "(warned; the manifest records both code fingerprints)",
    )
    score.add_argument(
        "--allow-all-errored",
        action="store_true",
        help="exit 0 even when every candidate errored under onError: none (warned; exit 3 without it)",
    )
    score.add_argument(
        "--plot",
        metavar="FILE",
        help="also draw the distribution of the final rewards and of each component here (PNG; needs "
        "matplotlib: the core's plot extra)",
    )

    audit = sub.add_parser(
        "audit",
        help="red-team the configured reward with every installed attack family (docs/audit.md)",
        description="Red-team the configured reward: attack completions scored as training would "
        "score them, against honest baselines; exit 4 when an attack leaks or errors, 5 when a component "
        "had no attack tried on it, 2 when nothing could run.",
        formatter_class=_DefaultsFormatter,
    )
    audit.add_argument("config", nargs="?", help="YAML or TOML configuration, as for `rewardkit score`")
    audit.add_argument("overrides", nargs="*", metavar="key=value", help="configuration overrides")
    audit.add_argument("--rows", type=int, default=12, help="rows sampled from the configured data")
    audit.add_argument("--family", help="run only this attack family, against every provider")
    audit.add_argument("--json", metavar="OUT", help="write every candidate's score and reason here")
    audit.add_argument(
        "--max-calls", type=int, default=1000, help="most candidates scored by a judge or reward model"
    )
    audit.add_argument(
        "--margin", type=float, default=0.05, help="share of the observed range of finals an attack may gain"
    )
    audit.add_argument(
        "--allow-unsandboxed",
        action="store_true",
        help="send destructive payloads to providers that do not declare a sandbox",
    )
    audit.add_argument(
        "--allow-untested",
        action="store_true",
        help="exit 0 rather than 5 when a component had no attack tried on it (docs/audit.md)",
    )
    audit.add_argument("--seed", type=int, default=0, help="seed of the row sample")
    audit.add_argument("--list", action="store_true", help="list the installed attack families and exit")
    audit.add_argument("--quiet", action="store_true", help="no progress lines on stderr")

    monitor = sub.add_parser(
        "monitor",
        help="report the reward monitor's signals and alarms of a training run (docs/monitor.md)",
        description="Report what the reward monitor (rl.monitor) logged: its signals, and each alarm "
        "with the step its change began.",
    )
    monitor.add_argument("logdir", help="the run's rl.monitor.logdir (holds monitor.jsonl)")
    monitor.add_argument("--plot", metavar="FILE", help="draw the signals over steps, alarms marked (PNG)")
    monitor.add_argument("--gate", action="store_true", help="exit non-zero when an alarm was raised")

    # Every option says its default; where it is None ("from the configuration", "no limit") in words.
    serve = sub.add_parser(
        "serve",
        help="run the Reward Service (HTTP/JSON)",
        description=f"Run the Reward Service (HTTP/JSON); needs {SERVER_INSTALL}.",
        formatter_class=_DefaultsFormatter,
    )
    serve.add_argument("config", help="YAML or TOML configuration")
    serve.add_argument("overrides", nargs="*", metavar="key=value", help="configuration overrides")
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on")
    serve.add_argument("--port", type=int, default=8000, help="0 picks a free port (printed at start)")
    serve.add_argument(
        "--tokens-file",
        help="bearer tokens, one per line (also REWARDKIT_TOKENS) (default: none: loopback only, "
        "unless --insecure-no-auth)",
    )
    serve.add_argument("--max-body-bytes", type=int, help=SERVE_MAX_BODY_HELP)
    serve.add_argument(
        "--max-rollouts-per-call",
        type=int,
        help="most rollouts one request may carry (default: rewards.max_inflight)",
    )
    serve.add_argument(
        "--drain-timeout",
        type=float,
        help="seconds to drain in-flight requests on SIGTERM (default: no limit, all of them)",
    )
    serve.add_argument(
        "--insecure-no-auth",
        action="store_true",
        help="listen on a non-loopback address with no token configured (an open service, on purpose)",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return _COMMANDS[args.command](args)
    except RewardkitError as error:
        print(f"rewardkit: error: {error}", file=sys.stderr)
        return 2
    except ImportError as error:
        # An optional dependency is missing: one line naming the extra that brings it, not a traceback.
        missing = missing_extra(error, f"`rewardkit {args.command}`")
        if missing is None:
            raise
        print(f"rewardkit: error: {missing}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
