"""``rewardkit audit``: the verb the core's command line reaches here when this distribution is installed."""

from __future__ import annotations

import argparse
import sys

from rewardkit.attacks import reward_attacks
from rewardkit.tables import format_table
from rewardkit_audit.run import audit


def _progress(message: str) -> None:
    print(f"rewardkit audit: {message}", file=sys.stderr, flush=True)


def _audits(providers: tuple[str, ...], needs: tuple[str, ...]) -> str:
    named = ",".join(providers)
    if not needs:
        return named
    anyone = f"any provider needing {','.join(needs)}"
    return f"{named} + {anyone}" if named else anyone


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
                    ",".join(family.providers)
                    + (f" (+ needs {','.join(family.needs)})" if family.needs else ""),
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
        seed=args.seed,
        progress=None if args.quiet else _progress,
    )
    for line in report.lines():
        print(line)
    if args.json is not None:
        report.write_json(args.json)
        print(f"rewardkit audit: wrote every candidate's score and reason to {args.json}", file=sys.stderr)
    return report.exit_code
