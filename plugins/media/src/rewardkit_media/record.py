"""The run record of a decoded-media reward: the adapter's revision and the deployed scorer's.

A provider record (``reward.providers``, ``ScoredBatch.providers``) carries the catalog
reference, the provider, its revision, its identity hash and its code fingerprint. For a
decoded-media adapter that revision is the adapter's own (``"1"``: the code that decodes, sends
and reads), while what scores the pixels is the remote scorer the operator deployed, named by
the ``revision`` param (``MediaServiceConfig.revision``; the recipe's sentinel is refused at
``load``). That param enters the identity hash, so a resumed or compared run under another
scorer is told apart; but a hash names nothing a reader can check against the deployment. The
run record here adds it by name: ``scorer_revision`` on every decoded-media provider's record.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rewardkit_media.config import MediaServiceConfig

if TYPE_CHECKING:
    from rewardkit.plugin import Reward

SCORER_REVISION = "scorer_revision"


def scorer_revisions(reward: Reward) -> dict[str, str]:
    """Provider name -> the deployed scorer revision set in its params, for each decoded-media provider."""
    revisions = {}
    for bound in reward.worker.providers.values():
        schema = bound.spec.params_schema
        if isinstance(schema, type) and issubclass(schema, MediaServiceConfig):
            revisions[bound.name] = str(bound.params["revision"])
    return revisions


def run_record(reward: Reward) -> list[dict[str, Any]]:
    """``reward.providers`` as JSON, each decoded-media provider's with its ``scorer_revision``."""
    deployed = scorer_revisions(reward)
    records = []
    for record in reward.providers:
        entry = record.to_json()
        if record.provider in deployed:
            entry[SCORER_REVISION] = deployed[record.provider]
        records.append(entry)
    return records
