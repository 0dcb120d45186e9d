"""The plugin API: everything a distribution may import from rewardkit besides its documented top level
(``rewardkit.load``, ``rewardkit.RewardProviderSpec``, ``rewardkit.hookimpl``...). Distributions import
only this module and ``rewardkit`` (``tests/test_import_rule.py``), so the core's internals can move
without breaking a plugin: a rename inside the core changes the table below, never a plugin.

Names load on first use (``__getattr__``), so a plugin pays only for the core modules of the names it
uses; type checkers read the imports under ``TYPE_CHECKING``.
Two names are renamed here, as two modules of the core use them: ``normalise_params``
(``rewardkit.contracts.params.normalise``) and ``normalise_text`` (``rewardkit.contracts.text.normalise``).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rewardkit.artifacts import (
        folder_identity,
    )
    from rewardkit.bindings.decoded_queries import (
        generated_part,
        response_of,
        strip_eos,
    )
    from rewardkit.bindings.ranks import (
        CollectiveRanks,
        Ranks,
    )
    from rewardkit.builtin.answers import (
        EXTRACTED_ANSWER,
        arithmetic_gold,
        gsm8k_gold,
        last_answer_tag,
        last_boxed,
    )
    from rewardkit.builtin.countdown import (
        countdown_problem,
    )
    from rewardkit.builtin.expressions import (
        ExpressionError,
        evaluate,
    )
    from rewardkit.checkpoint_serving import (
        CheckpointRef,
        ServedModel,
        wait_for_model,
    )
    from rewardkit.checkpoint_serving.contract import (
        list_models,
    )
    from rewardkit.config import (
        MAX_DEADLINE_S,
        DataConfig,
        RewardkitConfig,
        RewardSelection,
        Section,
        check_deadline,
        load_config,
        non_empty,
    )
    from rewardkit.contracts import (
        CANDIDATE_NEEDS,
        KNOWN_NEEDS,
        LENGTH_VERDICT,
        NAME_PATTERN,
        MetricContribution,
        RewardCandidate,
        RewardCandidateResult,
        RewardContext,
        RewardGroupRequest,
        RewardGroupResult,
        RewardProviderResult,
        RewardProviderSpec,
        Status,
    )
    from rewardkit.contracts.errors import (
        BindingError,
        ConfigError,
        DataError,
        IdentityMismatchError,
        PreflightError,
        ProviderError,
        RequestCancelled,
        RequestTimeout,
        RewardContractError,
        RewardkitError,
        SelectionRefused,
    )
    from rewardkit.contracts.frozen import (
        NotJSONError,
        freeze,
        strictly_equal,
        thaw,
    )
    from rewardkit.contracts.identity import (
        canonical_json,
        sha256_hex,
    )
    from rewardkit.contracts.params import (
        ParamsError,
        ParamsModel,
        operator_only,
        operator_only_reason,
        validate_params,
    )
    from rewardkit.contracts.params import (
        normalise as normalise_params,
    )
    from rewardkit.contracts.text import (
        fold_lookalikes,
        is_blank,
        skeleton,
        visible,
    )
    from rewardkit.contracts.text import (
        normalise as normalise_text,
    )
    from rewardkit.job.data import (
        PreparedRow,
        load_prompt_rows,
        read_rollouts,
    )
    from rewardkit.job.provenance import (
        ProviderRecord,
        RevisionNotBumpedWarning,
        check_resume_all,
    )
    from rewardkit.job.tables import (
        format_table,
    )
    from rewardkit.scoring.advantages import (
        Scaling,
    )
    from rewardkit.scoring.backpressure import (
        BackpressureTimeout,
        RequestTooLarge,
    )
    from rewardkit.scoring.batch_input import (
        GroupLike,
        as_batch,
    )
    from rewardkit.scoring.cancellation import (
        NEVER,
        CancelScope,
        current,
        entered,
        run_bounded,
        timeout_of,
    )
    from rewardkit.scoring.capacity import (
        usable_cpus,
    )
    from rewardkit.scoring.composition import (
        ComponentSpec,
        Composition,
        CompositionError,
        RerunSpec,
        RewardSpec,
        RewardSpecError,
        compose,
    )
    from rewardkit.scoring.metrics import (
        WeightedMean,
        merge_metrics,
        metric_name,
        zero_variance_groups,
    )
    from rewardkit.scoring.observers import (
        BatchObserver,
        ObservedBatch,
        observer_for,
    )
    from rewardkit.scoring.pointwise import (
        MappedProvider,
        map_candidates,
    )
    from rewardkit.scoring.reproduction import (
        REPRODUCTION_NOTE,
        CanaryFailed,
        Charged,
        Fault,
        RerunBudget,
        areproduce,
        reproduce,
        rerun_budget,
    )
    from rewardkit.scoring.reward import (
        Reward,
        available_inputs,
        build_reward,
        load,
        spec_of,
    )
    from rewardkit.scoring.scored import (
        ScoredBatch,
        ScoredGroup,
    )
    from rewardkit.scoring.split_batch import (
        finish_split_batch,
    )
    from rewardkit.scoring.stream import (
        astream_of,
    )
    from rewardkit.scoring.worker import (
        REWARD_FIELDS,
        RewardWorker,
        ScoredCandidate,
        batch_parts,
        group_parts,
    )
    from rewardkit.seam.attacks import (
        AttackFamily,
        AttackSpec,
        AuditRow,
        AuditRowBuilder,
        RewardAttacks,
        reward_attacks,
    )
    from rewardkit.seam.catalog import (
        Catalog,
        resolve_catalog,
        serving_strategies,
    )
    from rewardkit.seam.extensions import (
        CatalogSpec,
        ConfigSectionSpec,
        RewardBackendSpec,
        RewardExpansionSpec,
    )
    from rewardkit.seam.extras import (
        MissingExtraError,
        import_optional,
        install_line,
    )
    from rewardkit.seam.hookspecs import (
        hookimpl,
    )
    from rewardkit.seam.moved import (
        moved_attribute,
    )
    from rewardkit.seam.protocols import (
        CatalogRegistrar,
        CommandRegistrar,
        CommandRunner,
        ConfigSectionRegistrar,
        ProviderRegistrar,
        RewardAttackRegistrar,
        RewardBackendRegistrar,
        RewardExpansionRegistrar,
        RewardLike,
        ServingStrategyRegistrar,
        TrainerBindingRegistrar,
    )
    from rewardkit.transport import (
        HttpClient,
        HttpError,
        HttpResponse,
        HttpTimeout,
        RetryPolicy,
        retry_after_seconds,
        run_sync,
    )

# public name -> (the core module holding it, its name there)
_WHERE: dict[str, tuple[str, str]] = {
    "AttackFamily": ("rewardkit.seam.attacks", "AttackFamily"),
    "AttackSpec": ("rewardkit.seam.attacks", "AttackSpec"),
    "AuditRow": ("rewardkit.seam.attacks", "AuditRow"),
    "AuditRowBuilder": ("rewardkit.seam.attacks", "AuditRowBuilder"),
    "BackpressureTimeout": ("rewardkit.scoring.backpressure", "BackpressureTimeout"),
    "BatchObserver": ("rewardkit.scoring.observers", "BatchObserver"),
    "BindingError": ("rewardkit.contracts.errors", "BindingError"),
    "CANDIDATE_NEEDS": ("rewardkit.contracts", "CANDIDATE_NEEDS"),
    "CanaryFailed": ("rewardkit.scoring.reproduction", "CanaryFailed"),
    "CancelScope": ("rewardkit.scoring.cancellation", "CancelScope"),
    "Catalog": ("rewardkit.seam.catalog", "Catalog"),
    "CatalogRegistrar": ("rewardkit.seam.protocols", "CatalogRegistrar"),
    "CatalogSpec": ("rewardkit.seam.extensions", "CatalogSpec"),
    "Charged": ("rewardkit.scoring.reproduction", "Charged"),
    "CheckpointRef": ("rewardkit.checkpoint_serving", "CheckpointRef"),
    "CollectiveRanks": ("rewardkit.bindings.ranks", "CollectiveRanks"),
    "CommandRegistrar": ("rewardkit.seam.protocols", "CommandRegistrar"),
    "CommandRunner": ("rewardkit.seam.protocols", "CommandRunner"),
    "ComponentSpec": ("rewardkit.scoring.composition", "ComponentSpec"),
    "Composition": ("rewardkit.scoring.composition", "Composition"),
    "CompositionError": ("rewardkit.scoring.composition", "CompositionError"),
    "ConfigError": ("rewardkit.contracts.errors", "ConfigError"),
    "ConfigSectionRegistrar": ("rewardkit.seam.protocols", "ConfigSectionRegistrar"),
    "ConfigSectionSpec": ("rewardkit.seam.extensions", "ConfigSectionSpec"),
    "DataConfig": ("rewardkit.config", "DataConfig"),
    "DataError": ("rewardkit.contracts.errors", "DataError"),
    "EXTRACTED_ANSWER": ("rewardkit.builtin.answers", "EXTRACTED_ANSWER"),
    "ExpressionError": ("rewardkit.builtin.expressions", "ExpressionError"),
    "Fault": ("rewardkit.scoring.reproduction", "Fault"),
    "GroupLike": ("rewardkit.scoring.batch_input", "GroupLike"),
    "HttpClient": ("rewardkit.transport", "HttpClient"),
    "HttpError": ("rewardkit.transport", "HttpError"),
    "HttpResponse": ("rewardkit.transport", "HttpResponse"),
    "HttpTimeout": ("rewardkit.transport", "HttpTimeout"),
    "IdentityMismatchError": ("rewardkit.contracts.errors", "IdentityMismatchError"),
    "KNOWN_NEEDS": ("rewardkit.contracts", "KNOWN_NEEDS"),
    "LENGTH_VERDICT": ("rewardkit.contracts", "LENGTH_VERDICT"),
    "MAX_DEADLINE_S": ("rewardkit.config", "MAX_DEADLINE_S"),
    "MappedProvider": ("rewardkit.scoring.pointwise", "MappedProvider"),
    "MetricContribution": ("rewardkit.contracts", "MetricContribution"),
    "MissingExtraError": ("rewardkit.seam.extras", "MissingExtraError"),
    "NAME_PATTERN": ("rewardkit.contracts", "NAME_PATTERN"),
    "NEVER": ("rewardkit.scoring.cancellation", "NEVER"),
    "NotJSONError": ("rewardkit.contracts.frozen", "NotJSONError"),
    "ObservedBatch": ("rewardkit.scoring.observers", "ObservedBatch"),
    "ParamsError": ("rewardkit.contracts.params", "ParamsError"),
    "ParamsModel": ("rewardkit.contracts.params", "ParamsModel"),
    "PreflightError": ("rewardkit.contracts.errors", "PreflightError"),
    "PreparedRow": ("rewardkit.job.data", "PreparedRow"),
    "ProviderError": ("rewardkit.contracts.errors", "ProviderError"),
    "ProviderRecord": ("rewardkit.job.provenance", "ProviderRecord"),
    "ProviderRegistrar": ("rewardkit.seam.protocols", "ProviderRegistrar"),
    "REPRODUCTION_NOTE": ("rewardkit.scoring.reproduction", "REPRODUCTION_NOTE"),
    "REWARD_FIELDS": ("rewardkit.scoring.worker", "REWARD_FIELDS"),
    "Ranks": ("rewardkit.bindings.ranks", "Ranks"),
    "RequestCancelled": ("rewardkit.contracts.errors", "RequestCancelled"),
    "RequestTimeout": ("rewardkit.contracts.errors", "RequestTimeout"),
    "RequestTooLarge": ("rewardkit.scoring.backpressure", "RequestTooLarge"),
    "RerunBudget": ("rewardkit.scoring.reproduction", "RerunBudget"),
    "RerunSpec": ("rewardkit.scoring.composition", "RerunSpec"),
    "RetryPolicy": ("rewardkit.transport", "RetryPolicy"),
    "RevisionNotBumpedWarning": ("rewardkit.job.provenance", "RevisionNotBumpedWarning"),
    "Reward": ("rewardkit.scoring.reward", "Reward"),
    "RewardAttackRegistrar": ("rewardkit.seam.protocols", "RewardAttackRegistrar"),
    "RewardAttacks": ("rewardkit.seam.attacks", "RewardAttacks"),
    "RewardBackendRegistrar": ("rewardkit.seam.protocols", "RewardBackendRegistrar"),
    "RewardBackendSpec": ("rewardkit.seam.extensions", "RewardBackendSpec"),
    "RewardExpansionRegistrar": ("rewardkit.seam.protocols", "RewardExpansionRegistrar"),
    "RewardExpansionSpec": ("rewardkit.seam.extensions", "RewardExpansionSpec"),
    "RewardCandidate": ("rewardkit.contracts", "RewardCandidate"),
    "RewardCandidateResult": ("rewardkit.contracts", "RewardCandidateResult"),
    "RewardContext": ("rewardkit.contracts", "RewardContext"),
    "RewardContractError": ("rewardkit.contracts.errors", "RewardContractError"),
    "RewardGroupRequest": ("rewardkit.contracts", "RewardGroupRequest"),
    "RewardGroupResult": ("rewardkit.contracts", "RewardGroupResult"),
    "RewardLike": ("rewardkit.seam.protocols", "RewardLike"),
    "RewardProviderResult": ("rewardkit.contracts", "RewardProviderResult"),
    "RewardProviderSpec": ("rewardkit.contracts", "RewardProviderSpec"),
    "RewardSelection": ("rewardkit.config", "RewardSelection"),
    "RewardSpec": ("rewardkit.scoring.composition", "RewardSpec"),
    "RewardSpecError": ("rewardkit.scoring.composition", "RewardSpecError"),
    "RewardWorker": ("rewardkit.scoring.worker", "RewardWorker"),
    "RewardkitConfig": ("rewardkit.config", "RewardkitConfig"),
    "RewardkitError": ("rewardkit.contracts.errors", "RewardkitError"),
    "Scaling": ("rewardkit.scoring.advantages", "Scaling"),
    "ScoredBatch": ("rewardkit.scoring.scored", "ScoredBatch"),
    "ScoredCandidate": ("rewardkit.scoring.worker", "ScoredCandidate"),
    "ScoredGroup": ("rewardkit.scoring.scored", "ScoredGroup"),
    "Section": ("rewardkit.config", "Section"),
    "SelectionRefused": ("rewardkit.contracts.errors", "SelectionRefused"),
    "ServedModel": ("rewardkit.checkpoint_serving", "ServedModel"),
    "ServingStrategyRegistrar": ("rewardkit.seam.protocols", "ServingStrategyRegistrar"),
    "Status": ("rewardkit.contracts", "Status"),
    "TrainerBindingRegistrar": ("rewardkit.seam.protocols", "TrainerBindingRegistrar"),
    "WeightedMean": ("rewardkit.scoring.metrics", "WeightedMean"),
    "areproduce": ("rewardkit.scoring.reproduction", "areproduce"),
    "arithmetic_gold": ("rewardkit.builtin.answers", "arithmetic_gold"),
    "as_batch": ("rewardkit.scoring.batch_input", "as_batch"),
    "astream_of": ("rewardkit.scoring.stream", "astream_of"),
    "available_inputs": ("rewardkit.scoring.reward", "available_inputs"),
    "batch_parts": ("rewardkit.scoring.worker", "batch_parts"),
    "build_reward": ("rewardkit.scoring.reward", "build_reward"),
    "canonical_json": ("rewardkit.contracts.identity", "canonical_json"),
    "check_deadline": ("rewardkit.config", "check_deadline"),
    "check_resume_all": ("rewardkit.job.provenance", "check_resume_all"),
    "compose": ("rewardkit.scoring.composition", "compose"),
    "countdown_problem": ("rewardkit.builtin.countdown", "countdown_problem"),
    "current": ("rewardkit.scoring.cancellation", "current"),
    "entered": ("rewardkit.scoring.cancellation", "entered"),
    "evaluate": ("rewardkit.builtin.expressions", "evaluate"),
    "finish_split_batch": ("rewardkit.scoring.split_batch", "finish_split_batch"),
    "fold_lookalikes": ("rewardkit.contracts.text", "fold_lookalikes"),
    "freeze": ("rewardkit.contracts.frozen", "freeze"),
    "folder_identity": ("rewardkit.artifacts", "folder_identity"),
    "format_table": ("rewardkit.job.tables", "format_table"),
    "generated_part": ("rewardkit.bindings.decoded_queries", "generated_part"),
    "group_parts": ("rewardkit.scoring.worker", "group_parts"),
    "gsm8k_gold": ("rewardkit.builtin.answers", "gsm8k_gold"),
    "hookimpl": ("rewardkit.seam.hookspecs", "hookimpl"),
    "import_optional": ("rewardkit.seam.extras", "import_optional"),
    "install_line": ("rewardkit.seam.extras", "install_line"),
    "is_blank": ("rewardkit.contracts.text", "is_blank"),
    "last_answer_tag": ("rewardkit.builtin.answers", "last_answer_tag"),
    "last_boxed": ("rewardkit.builtin.answers", "last_boxed"),
    "list_models": ("rewardkit.checkpoint_serving.contract", "list_models"),
    "load": ("rewardkit.scoring.reward", "load"),
    "load_config": ("rewardkit.config", "load_config"),
    "load_prompt_rows": ("rewardkit.job.data", "load_prompt_rows"),
    "map_candidates": ("rewardkit.scoring.pointwise", "map_candidates"),
    "merge_metrics": ("rewardkit.scoring.metrics", "merge_metrics"),
    "metric_name": ("rewardkit.scoring.metrics", "metric_name"),
    "moved_attribute": ("rewardkit.seam.moved", "moved_attribute"),
    "non_empty": ("rewardkit.config", "non_empty"),
    "normalise_params": ("rewardkit.contracts.params", "normalise"),
    "normalise_text": ("rewardkit.contracts.text", "normalise"),
    "observer_for": ("rewardkit.scoring.observers", "observer_for"),
    "operator_only": ("rewardkit.contracts.params", "operator_only"),
    "operator_only_reason": ("rewardkit.contracts.params", "operator_only_reason"),
    "read_rollouts": ("rewardkit.job.data", "read_rollouts"),
    "reproduce": ("rewardkit.scoring.reproduction", "reproduce"),
    "rerun_budget": ("rewardkit.scoring.reproduction", "rerun_budget"),
    "resolve_catalog": ("rewardkit.seam.catalog", "resolve_catalog"),
    "response_of": ("rewardkit.bindings.decoded_queries", "response_of"),
    "reward_attacks": ("rewardkit.seam.attacks", "reward_attacks"),
    "run_bounded": ("rewardkit.scoring.cancellation", "run_bounded"),
    "retry_after_seconds": ("rewardkit.transport", "retry_after_seconds"),
    "run_sync": ("rewardkit.transport", "run_sync"),
    "serving_strategies": ("rewardkit.seam.catalog", "serving_strategies"),
    "sha256_hex": ("rewardkit.contracts.identity", "sha256_hex"),
    "skeleton": ("rewardkit.contracts.text", "skeleton"),
    "spec_of": ("rewardkit.scoring.reward", "spec_of"),
    "strictly_equal": ("rewardkit.contracts.frozen", "strictly_equal"),
    "strip_eos": ("rewardkit.bindings.decoded_queries", "strip_eos"),
    "thaw": ("rewardkit.contracts.frozen", "thaw"),
    "timeout_of": ("rewardkit.scoring.cancellation", "timeout_of"),
    "usable_cpus": ("rewardkit.scoring.capacity", "usable_cpus"),
    "validate_params": ("rewardkit.contracts.params", "validate_params"),
    "visible": ("rewardkit.contracts.text", "visible"),
    "wait_for_model": ("rewardkit.checkpoint_serving", "wait_for_model"),
    "zero_variance_groups": ("rewardkit.scoring.metrics", "zero_variance_groups"),
}

__all__ = [
    "CANDIDATE_NEEDS",
    "EXTRACTED_ANSWER",
    "KNOWN_NEEDS",
    "LENGTH_VERDICT",
    "MAX_DEADLINE_S",
    "NAME_PATTERN",
    "NEVER",
    "REPRODUCTION_NOTE",
    "REWARD_FIELDS",
    "AttackFamily",
    "AttackSpec",
    "AuditRow",
    "AuditRowBuilder",
    "BackpressureTimeout",
    "BatchObserver",
    "BindingError",
    "CanaryFailed",
    "CancelScope",
    "Catalog",
    "CatalogRegistrar",
    "CatalogSpec",
    "Charged",
    "CheckpointRef",
    "CollectiveRanks",
    "CommandRegistrar",
    "CommandRunner",
    "ComponentSpec",
    "Composition",
    "CompositionError",
    "ConfigError",
    "ConfigSectionRegistrar",
    "ConfigSectionSpec",
    "DataConfig",
    "DataError",
    "ExpressionError",
    "Fault",
    "GroupLike",
    "HttpClient",
    "HttpError",
    "HttpResponse",
    "HttpTimeout",
    "IdentityMismatchError",
    "MappedProvider",
    "MetricContribution",
    "MissingExtraError",
    "NotJSONError",
    "ObservedBatch",
    "ParamsError",
    "ParamsModel",
    "PreflightError",
    "PreparedRow",
    "ProviderError",
    "ProviderRecord",
    "ProviderRegistrar",
    "Ranks",
    "RequestCancelled",
    "RequestTimeout",
    "RequestTooLarge",
    "RerunBudget",
    "RerunSpec",
    "RetryPolicy",
    "RevisionNotBumpedWarning",
    "Reward",
    "RewardAttackRegistrar",
    "RewardAttacks",
    "RewardBackendRegistrar",
    "RewardBackendSpec",
    "RewardCandidate",
    "RewardCandidateResult",
    "RewardContext",
    "RewardContractError",
    "RewardExpansionRegistrar",
    "RewardExpansionSpec",
    "RewardGroupRequest",
    "RewardGroupResult",
    "RewardLike",
    "RewardProviderResult",
    "RewardProviderSpec",
    "RewardSelection",
    "RewardSpec",
    "RewardSpecError",
    "RewardWorker",
    "RewardkitConfig",
    "RewardkitError",
    "Scaling",
    "ScoredBatch",
    "ScoredCandidate",
    "ScoredGroup",
    "Section",
    "SelectionRefused",
    "ServedModel",
    "ServingStrategyRegistrar",
    "Status",
    "TrainerBindingRegistrar",
    "WeightedMean",
    "areproduce",
    "arithmetic_gold",
    "as_batch",
    "astream_of",
    "available_inputs",
    "batch_parts",
    "build_reward",
    "canonical_json",
    "check_deadline",
    "check_resume_all",
    "compose",
    "countdown_problem",
    "current",
    "entered",
    "evaluate",
    "finish_split_batch",
    "fold_lookalikes",
    "folder_identity",
    "format_table",
    "freeze",
    "generated_part",
    "group_parts",
    "gsm8k_gold",
    "hookimpl",
    "import_optional",
    "install_line",
    "is_blank",
    "last_answer_tag",
    "last_boxed",
    "list_models",
    "load",
    "load_config",
    "load_prompt_rows",
    "map_candidates",
    "merge_metrics",
    "metric_name",
    "moved_attribute",
    "non_empty",
    "normalise_params",
    "normalise_text",
    "observer_for",
    "operator_only",
    "operator_only_reason",
    "read_rollouts",
    "reproduce",
    "rerun_budget",
    "resolve_catalog",
    "response_of",
    "retry_after_seconds",
    "reward_attacks",
    "run_bounded",
    "run_sync",
    "serving_strategies",
    "sha256_hex",
    "skeleton",
    "spec_of",
    "strictly_equal",
    "strip_eos",
    "thaw",
    "timeout_of",
    "usable_cpus",
    "validate_params",
    "visible",
    "wait_for_model",
    "zero_variance_groups",
]


def __getattr__(name: str) -> Any:
    where = _WHERE.get(name)
    if where is None:
        from rewardkit.seam import moved

        if f"{__name__}.{name}" in moved.MOVED_ATTRIBUTES:  # a 0.1 name, now in a shared library
            return moved.moved_attribute(__name__, name)
        raise AttributeError(
            f"module 'rewardkit.plugin' has no attribute {name!r} (the plugin API is __all__)"
        )
    value = getattr(importlib.import_module(where[0]), where[1])
    globals()[name] = value  # later look-ups skip __getattr__
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
