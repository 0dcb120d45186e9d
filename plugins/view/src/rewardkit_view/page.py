"""The self-contained HTML page of ``rewardkit view`` (and of ``rewardkit compare --html``).

One file, no network, no server: the page's script and style are inlined, the data is embedded as JSON
in a ``<script type="application/json">`` block, and the page builds every element from it with
``textContent`` and DOM calls, never HTML from data. A completion is written by an adversary, so two
walls stand between its text and the browser:

- the embedded JSON escapes ``<``, ``>``, ``&`` and the two JavaScript line separators, so no text can
  close the data block (``</script>``) or open a comment;
- a Content-Security-Policy allows exactly the page's own script and style (by SHA-256) and nothing
  else: no other inline script, no event-handler attribute, no network request, even if a third
  bug let markup through.

Large files stay usable: every candidate is embedded (completions beyond ``max_text`` characters are
cut, and the page says how much), and the table renders one page of rows at a time."""

from __future__ import annotations

import base64
import hashlib
import html
import json
import re
from importlib import resources
from typing import Any

from rewardkit_view.inputs import MonitorRun, Results
from rewardkit_view.summary import FINAL, component_summary, zero_variance_group_ids

__all__ = ["DEFAULT_MAX_TEXT", "PAGE_SIZE", "embed_json", "page_data", "render_page"]

DEFAULT_MAX_TEXT = 4000  # characters of a completion embedded; a longer one is cut, with its full length
PAGE_SIZE = 50  # rows the candidates table renders at a time (client-side pagination)
# the run manifest's fields shown as the page's provenance, in this order
_MARKER = re.compile(r"\{\{(?:POLICY|TITLE|STYLE|DATA|SCRIPT)\}\}")
PROVENANCE_FIELDS = (
    "run",
    "started",
    "config",
    "rollouts",
    "catalog",
    "service",
    "backend",
    "providers",
    "spec",
)


def embed_json(value: Any) -> str:
    """JSON that is inert inside an HTML ``<script>`` block: every ``<``, ``>`` and ``&`` (so ``</script>``,
    ``<!--`` and ``]]>`` cannot appear) and U+2028/U+2029 are written as ``\\uXXXX`` escapes, which
    ``JSON.parse`` reads back as the same characters."""
    text = json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    for character in "<>&\u2028\u2029":
        text = text.replace(character, f"\\u{ord(character):04x}")
    return text


def _row(row: dict[str, Any], group_index: int, components: list[str], max_text: int) -> dict[str, Any]:
    text = str(row.get("completion") or "")
    parts: list[list[Any] | None] = []
    for name in components:
        part = row["breakdown"].get(name)
        if not isinstance(part, dict):
            parts.append(None)
            continue
        parts.append(
            [part.get("status"), part.get("value"), part.get("reason"), part.get("extracted_answer")]
        )
    diagnostics = {
        f"{component}/{name}": value
        for component, values in (row.get("diagnostics") or {}).items()
        if isinstance(values, dict)
        for name, value in values.items()
    }
    return {
        "g": group_index,
        "t": str(row["trajectory_id"]),
        "f": row.get("final"),
        "a": row.get("advantage"),
        "x": text[:max_text],
        "n": len(text),
        "b": parts,
        "d": diagnostics,
    }


def _provenance(manifest: dict[str, Any] | None) -> dict[str, Any] | None:
    if manifest is None:
        return None
    return {name: manifest[name] for name in PROVENANCE_FIELDS if name in manifest}


def _audit_view(audit: dict[str, Any]) -> dict[str, Any]:
    """The audit's providers and every attack that did not hold, with its candidates' records (the
    attack's text where the audit's file carries it)."""
    findings = []
    held = 0
    for family in audit.get("families", []):
        records = [record for record in family.get("candidates", []) if isinstance(record, dict)]
        for attack in family.get("attacks", []):
            if attack.get("verdict") == "holds":
                held += 1
                continue
            name = attack.get("name")
            findings.append(
                {
                    "family": family.get("family"),
                    "providers": family.get("providers", []),
                    **{
                        key: attack.get(key)
                        for key in (
                            "name",
                            "verdict",
                            "attack_mean",
                            "wrong_mean",
                            "right_mean",
                            "worst_row",
                            "worst_gain",
                            "rows_tried",
                            "error_example",
                        )
                    },
                    "candidates": [
                        {
                            key: record.get(key)
                            for key in ("row", "final", "status", "reason", "completion", "text")
                        }
                        for record in records
                        if record.get("group") == name and record.get("candidate") == name
                    ],
                }
            )
    return {
        "exit_code": audit.get("exit_code"),
        "providers": audit.get("providers", []),
        "untested": audit.get("untested", []),
        "held": held,
        "findings": findings,
    }


def _monitor_view(runs: list[MonitorRun]) -> list[dict[str, Any]]:
    return [
        {"label": run.label, "steps": run.steps, "signals": run.signals, "alarms": run.alarms} for run in runs
    ]


def page_data(
    results: Results,
    *,
    audit: dict[str, Any] | None = None,
    monitor: list[MonitorRun] | None = None,
    comparison: dict[str, Any] | None = None,
    max_text: int = DEFAULT_MAX_TEXT,
    source: str | None = None,
) -> dict[str, Any]:
    """Everything the page shows, as the JSON it embeds; ``source`` names it (default: the file's name)."""
    components = results.component_names()
    group_index: dict[str, int] = {}
    rows = []
    for row in results.rows:
        index = group_index.setdefault(str(row["group_id"]), len(group_index))
        rows.append(_row(row, index, components, max_text))
    if comparison is not None:
        # each candidate's reward and advantage under A, beside B's (the rows are B's)
        before = comparison["a_by_trajectory"]
        for row in rows:
            row["fa"], row["aa"] = before.get(row["t"], (None, None))
        comparison = {key: value for key, value in comparison.items() if key != "a_by_trajectory"}
    return {
        "source": source or results.path.name,
        "provenance": _provenance(results.manifest),
        "components": components,
        "summary": [component_summary(results.rows, name) for name in [*components, FINAL]],
        "zero_variance_groups": zero_variance_group_ids(results.rows),
        "groups": list(group_index),
        "rows": rows,
        "max_text": max_text,
        "page_size": PAGE_SIZE,
        "audit": None if audit is None else _audit_view(audit),
        "monitor": None if monitor is None else _monitor_view(monitor),
        "comparison": comparison,
    }


def _asset(name: str) -> str:
    return resources.files("rewardkit_view").joinpath(name).read_text(encoding="utf-8")


def _sha256_source(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode() + "'"


def render_page(data: dict[str, Any], title: str) -> str:
    """The page: the template with its style, script and data inlined, under a policy that lets only
    that style and that script run."""
    style, script = _asset("page.css"), _asset("page.js")
    policy = (
        f"default-src 'none'; script-src {_sha256_source(script)}; style-src {_sha256_source(style)}; "
        "img-src data:; base-uri 'none'; form-action 'none'"
    )
    fill = {
        "{{POLICY}}": html.escape(policy),
        "{{TITLE}}": html.escape(title),
        "{{STYLE}}": style,
        "{{DATA}}": embed_json(data),
        "{{SCRIPT}}": script,
    }
    # one pass over the template: a marker inside the data (a completion may hold "{{SCRIPT}}") is text
    return _MARKER.sub(lambda match: fill[match.group(0)], _asset("page.html"))
