"""The ``rewardkit`` command line."""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import sys
from collections.abc import Callable, Sequence
from typing import Any

from rewardkit.contracts.errors import NameConflictError, RegistrationError, RewardkitError
from rewardkit.job.tables import format_table
from rewardkit.seam.catalog import (
    config_sections,
    installed_providers,
    resolve_catalog,
    reward_backends,
    serving_strategies,
    trainer_bindings,
)
from rewardkit.seam.extras import KNOWN_VERBS, Known, install_line, missing_extra
from rewardkit.seam.plugins import PluginInfo, import_module_attribute, load_plugins
from rewardkit.seam.protocols import CommandRegistrar, CommandRunner
from rewardkit.seam.registry import owner_label

Command = CommandRunner
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
    registries = (
        ("providers", installed_providers()),
        ("serving", serving_strategies()),
        ("bindings", trainer_bindings()),
        ("backends", reward_backends()),
        ("sections", config_sections()),
    )
    for kind, registry in registries:
        for entry in registry:
            contributions.setdefault(entry.owner.name, {}).setdefault(kind, []).append(entry.name)
    for verb, owner in _VERB_OWNERS.items():
        contributions.setdefault(owner.name, {}).setdefault("commands", []).append(verb)
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
    from rewardkit.seam.extras import KNOWN_BINDINGS

    rows = describe()
    table = [
        (row["name"], f"{row['distribution']} {row['version']}", row["target"], row["description"])
        for row in rows
    ]
    if not any(row["name"] in KNOWN_BINDINGS for row in rows):
        known = next(iter(KNOWN_BINDINGS.values()))  # one distribution brings them all
        install = install_line(known.distribution, known.extra)
        # on stderr: --json stays a list a program can read
        print(f"bindings {', '.join(KNOWN_BINDINGS)} are not installed: {install}", file=sys.stderr)
    return _print_rows(args, rows, table, ("binding", "distribution", "target", "description"))


@command("score")
def cmd_score(args: argparse.Namespace) -> int:
    from rewardkit.job.score_job import run_score

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


class _DefaultsFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """argparse's "(default: ...)" after each option's help, except where the default is ``None``
    (the help text says what happens then) or the help already states it."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        if action.default is None or "(default:" in (action.help or ""):
            return action.help
        return super()._get_help_string(action)


def _version() -> str:
    try:
        return importlib.metadata.version("rewardkit-core")
    except importlib.metadata.PackageNotFoundError:  # run from a source tree that is not installed
        return "(not installed)"


class _Registrar:
    """What ``register_commands`` is handed, bound to one plugin: adds its verbs to the sub-parsers."""

    def __init__(
        self, sub: argparse._SubParsersAction[Any], owner: PluginInfo, owners: dict[str, PluginInfo]
    ):
        self._sub = sub
        self._owner = owner
        self._owners = owners  # verb -> the plugin that added it, for every plugin's verbs
        self.added: list[str] = []

    def add(
        self,
        name: str,
        run: CommandRunner | str,
        *,
        about: str,
        description: str | None = None,
        show_defaults: bool = False,
    ) -> argparse.ArgumentParser:
        if not name or not all(part.isalnum() for part in name.split("-")):
            raise RegistrationError(
                f"{owner_label(self._owner)}: verb {name!r} is not a word (letters, digits, -)"
            )
        if not (callable(run) or (isinstance(run, str) and ":" in run)):
            raise RegistrationError(
                f"{owner_label(self._owner)}: verb {name!r}: run must be callable or 'module:function'"
            )
        holder = self._owners.get(name)
        if name in self._sub.choices and holder is None:
            raise NameConflictError(
                f"{owner_label(self._owner)} adds the verb {name!r}, which is the core's own; "
                "choose another name"
            )
        if holder is not None:
            raise NameConflictError(
                f"verb {name!r} is added twice: by {owner_label(holder)} and by {owner_label(self._owner)}; "
                "uninstall or disable one of them (REWARDKIT_DISABLE_PLUGINS)"
            )
        parser = self._sub.add_parser(
            name,
            help=about,
            description=description or about,
            formatter_class=_DefaultsFormatter if show_defaults else argparse.HelpFormatter,
        )
        parser.set_defaults(_run=run)
        self._owners[name] = self._owner
        self.added.append(name)
        return parser

    def withdraw(self) -> None:
        """Forget the verbs this plugin added (its hook failed part-way)."""
        for name in self.added:
            self._sub.choices.pop(name, None)
            self._sub._choices_actions[:] = [a for a in self._sub._choices_actions if a.dest != name]
            self._owners.pop(name, None)


# Each verb a plugin added -> that plugin, as the last parser built found them (``rewardkit plugins``).
_VERB_OWNERS: dict[str, PluginInfo] = {}
_REGISTRAR_IS_A_COMMAND_REGISTRAR: type[CommandRegistrar] = _Registrar  # checked by the type checker


def _add_plugin_commands(sub: argparse._SubParsersAction[Any]) -> dict[str, PluginInfo]:
    """Every plugin's verbs (``register_commands``), then a stand-in for each known verb whose
    distribution is missing: ``rewardkit --help`` lists it, running it is one install line."""
    owners: dict[str, PluginInfo] = {}
    registrars: dict[str, _Registrar] = {}

    def make(owner: PluginInfo) -> _Registrar:
        registrars[owner.name] = _Registrar(sub, owner, owners)
        return registrars[owner.name]

    load_plugins().call_each(
        "register_commands", make, lambda owner: registrars[owner.name].withdraw(), handed_as="cli"
    )
    for name, known in KNOWN_VERBS.items():
        if name not in sub.choices:
            install = install_line(known.distribution, known.extra)
            stand_in = sub.add_parser(
                name,
                help=f"{known.about} (needs {known.distribution}: {install})",
                description=f"{known.about[:1].upper()}{known.about[1:]}; needs {known.distribution}, "
                f"which is not installed: {install}",
            )
            stand_in.add_argument("words", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
            stand_in.set_defaults(_run=_missing_verb(name, known))
    return owners


def _missing_verb(name: str, known: Known) -> CommandRunner:
    def run(args: argparse.Namespace) -> int:
        raise known.missing(f"`rewardkit {name}`")

    return run


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

    _VERB_OWNERS.clear()
    _VERB_OWNERS.update(_add_plugin_commands(sub))
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        run: CommandRunner | str = getattr(args, "_run", None) or _COMMANDS[args.command]
        if isinstance(run, str):  # a plugin's verb, imported now that it runs
            run = _import_runner(run, args.command)
        return int(run(args))
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


def _import_runner(path: str, verb: str) -> CommandRunner:
    try:
        run = import_module_attribute(path)
    except ImportError:
        raise  # main turns a missing module into its install line
    except AttributeError as error:
        raise RewardkitError(f"`rewardkit {verb}` runs {path}, which does not exist: {error}") from error
    if not callable(run):
        raise RewardkitError(f"`rewardkit {verb}` runs {path}, which is not callable")
    return run  # type: ignore[return-value]  # a callable taking the parsed arguments, by the hook's contract


if __name__ == "__main__":
    sys.exit(main())
