"""``rewardkit audit``: the verb the core's command line reaches here when this distribution is installed."""

from __future__ import annotations

import argparse
import sys

from rewardkit.plugin import AttackFamily, format_table, reward_attacks
from rewardkit_audit.run import audit


def _progress(message: str) -> None:
    print(f"rewardkit audit: {message}", file=sys.stderr, flush=True)


def _audits(family: AttackFamily) -> str:
    """Whom a family audits, as --list prints it."""
    if family.every_provider:
        return "every provider" + (" (rows of a fitting shape)" if family.row_shape is not None else "")
    named = ",".join(family.providers)
    extra = [f"needs {','.join(family.needs)}"] if family.needs else []
    if family.row_shape is not None:
        extra.append("rows of its shape")
    return named + (f" (+ {'; '.join(extra)})" if extra else "")


def list_attacks() -> int:
    found = reward_attacks()
    rows = []
    for entry in found.families:
        family = entry.value
        for attack in found.of_family(family.name):
            rows.append(
                (
                    family.name,
                    attack.name,
                    _audits(family),
                    "yes" if attack.destructive else "-",
                    f"{entry.owner.distribution}",
                )
            )
    print(format_table(rows, ("family", "attack", "audits", "destructive", "distribution")))
    return 0


def run_audit(args: argparse.Namespace) -> int:
    if args.list:
        return list_attacks()
    if args.config is None:
        raise SystemExit("rewardkit audit: give a CONFIG (or --list to see the attack families)")
    report = audit(
        args.config,
        args.overrides,
        rows=args.rows,
        family=args.family,
        margin=args.margin,
        max_calls=args.max_calls,
        allow_unsandboxed=args.allow_unsandboxed,
        allow_untested=getattr(args, "allow_untested", False),
        seed=args.seed,
        progress=None if args.quiet else _progress,
    )
    for line in report.lines():
        print(line)
    if args.json is not None:
        report.write_json(args.json)
        print(f"rewardkit audit: wrote every candidate's score and reason to {args.json}", file=sys.stderr)
    return report.exit_code
