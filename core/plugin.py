"""The plugin API: everything a distribution may import from rewardkit besides its documented top level
(``rewardkit.load``, ``rewardkit.RewardProviderSpec``, ``rewardkit.hookimpl``...). Distributions import
only this module and ``rewardkit`` (``tests/test_import_rule.py``), so the core's internals can move
without breaking a plugin: a rename inside the core changes the table below, never a plugin.

Names load on first use (``__getattr__``), so a plugin pays only for the core modules of the names it
uses; type checkers read the imports under ``TYPE_CHECKING``.
Two names are renamed here, as two modules of the core use them: ``normalise_params``
(``rewardkit.params.normalise``) and ``normalise_text`` (``rewardkit.text.normalise``).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rewardkit.advantages import (
        Scaling,
    )
    from rewardkit.artifacts import (
        folder_identity,
    )
    from rewardkit.attacks import (
        AttackFamily,
        AttackSpec,
        AuditRow,
        AuditRowBuilder,
        RewardAttacks,
        reward_attacks,
    )
    from rewardkit.backpressure import (
        BackpressureTimeout,
        RequestTooLarge,
    )
    from rewardkit.batch_input import (
        GroupLike,
        as_batch,
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
    from rewardkit.cancellation import (
        NEVER,
        CancelScope,
        current,
        entered,
        run_bounded,
        timeout_of,
    )
    from rewardkit.capacity import (
        usable_cpus,
    )
    from rewardkit.catalog import (
        Catalog,
        resolve_catalog,
        serving_strategies,
    )
    from rewardkit.checkpoint_serving import (
        CheckpointRef,
        ServedModel,
        wait_for_model,
    )
    from rewardkit.checkpoint_serving.contract import (
        list_models,
    )
    from rewardkit.composition import (
        ComponentSpec,
        Composition,
        CompositionError,
        RerunSpec,
        RewardSpec,
        RewardSpecError,
        compose,
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
    from rewardkit.data import (
        PreparedRow,
        load_prompt_rows,
        read_rollouts,
    )
    from rewardkit.errors import (
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
    from rewardkit.extensions import (
        CatalogSpec,
        ConfigSectionSpec,
        RewardBackendSpec,
        RewardExpansionSpec,
    )
    from rewardkit.extras import (
        MissingExtraError,
        import_optional,
        install_line,
    )
    from rewardkit.frozen import (
        NotJSONError,
        freeze,
        strictly_equal,
        thaw,
    )
    from rewardkit.hookspecs import (
        hookimpl,
    )
    from rewardkit.identity import (
        canonical_json,
        sha256_hex,
    )
    from rewardkit.metrics import (
        WeightedMean,
        merge_metrics,
        metric_name,
        zero_variance_groups,
    )
    from rewardkit.moved import (
        moved_attribute,
    )
    from rewardkit.observers import (
        BatchObserver,
        ObservedBatch,
        observer_for,
    )
    from rewardkit.params import (
        ParamsError,
        ParamsModel,
        operator_only,
        operator_only_reason,
        validate_params,
    )
    from rewardkit.params import (
        normalise as normalise_params,
    )
    from rewardkit.pointwise import (
        MappedProvider,
        map_candidates,
    )
    from rewardkit.protocols import (
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
    from rewardkit.provenance import (
        ProviderRecord,
        RevisionNotBumpedWarning,
        check_resume_all,
    )
    from rewardkit.reproduction import (
        REPRODUCTION_NOTE,
        CanaryFailed,
        Charged,
        Fault,
        RerunBudget,
        areproduce,
        reproduce,
        rerun_budget,
    )
    from rewardkit.reward import (
        Reward,
        available_inputs,
        build_reward,
        load,
        spec_of,
    )
    from rewardkit.scored import (
        ScoredBatch,
        ScoredGroup,
    )
    from rewardkit.split_batch import (
        finish_split_batch,
    )
    from rewardkit.stream import (
        astream_of,
    )
    from rewardkit.tables import (
        format_table,
    )
    from rewardkit.text import (
        fold_lookalikes,
        is_blank,
        skeleton,
        visible,
    )
    from rewardkit.text import (
        normalise as normalise_text,
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
    from rewardkit.worker import (
        REWARD_FIELDS,
        RewardWorker,
        ScoredCandidate,
        batch_parts,
        group_parts,
    )

# public name -> (the core module holding it, its name there)
_WHERE: dict[str, tuple[str, str]] = {
    "AttackFamily": ("rewardkit.attacks", "AttackFamily"),
    "AttackSpec": ("rewardkit.attacks", "AttackSpec"),
    "AuditRow": ("rewardkit.attacks", "AuditRow"),
    "AuditRowBuilder": ("rewardkit.attacks", "AuditRowBuilder"),
    "BackpressureTimeout": ("rewardkit.backpressure", "BackpressureTimeout"),
    "BatchObserver": ("rewardkit.observers", "BatchObserver"),
    "BindingError": ("rewardkit.errors", "BindingError"),
    "CANDIDATE_NEEDS": ("rewardkit.contracts", "CANDIDATE_NEEDS"),
    "CanaryFailed": ("rewardkit.reproduction", "CanaryFailed"),
    "CancelScope": ("rewardkit.cancellation", "CancelScope"),
    "Catalog": ("rewardkit.catalog", "Catalog"),
    "CatalogRegistrar": ("rewardkit.protocols", "CatalogRegistrar"),
    "CatalogSpec": ("rewardkit.extensions", "CatalogSpec"),
    "Charged": ("rewardkit.reproduction", "Charged"),
    "CheckpointRef": ("rewardkit.checkpoint_serving", "CheckpointRef"),
    "CollectiveRanks": ("rewardkit.bindings.ranks", "CollectiveRanks"),
    "CommandRegistrar": ("rewardkit.protocols", "CommandRegistrar"),
    "CommandRunner": ("rewardkit.protocols", "CommandRunner"),
    "ComponentSpec": ("rewardkit.composition", "ComponentSpec"),
    "Composition": ("rewardkit.composition", "Composition"),
    "CompositionError": ("rewardkit.composition", "CompositionError"),
    "ConfigError": ("rewardkit.errors", "ConfigError"),
    "ConfigSectionRegistrar": ("rewardkit.protocols", "ConfigSectionRegistrar"),
    "ConfigSectionSpec": ("rewardkit.extensions", "ConfigSectionSpec"),
    "DataConfig": ("rewardkit.config", "DataConfig"),
    "DataError": ("rewardkit.errors", "DataError"),
    "EXTRACTED_ANSWER": ("rewardkit.builtin.answers", "EXTRACTED_ANSWER"),
    "ExpressionError": ("rewardkit.builtin.expressions", "ExpressionError"),
    "Fault": ("rewardkit.reproduction", "Fault"),
    "GroupLike": ("rewardkit.batch_input", "GroupLike"),
    "HttpClient": ("rewardkit.transport", "HttpClient"),
    "HttpError": ("rewardkit.transport", "HttpError"),
    "HttpResponse": ("rewardkit.transport", "HttpResponse"),
    "HttpTimeout": ("rewardkit.transport", "HttpTimeout"),
    "IdentityMismatchError": ("rewardkit.errors", "IdentityMismatchError"),
    "KNOWN_NEEDS": ("rewardkit.contracts", "KNOWN_NEEDS"),
    "LENGTH_VERDICT": ("rewardkit.contracts", "LENGTH_VERDICT"),
    "MAX_DEADLINE_S": ("rewardkit.config", "MAX_DEADLINE_S"),
    "MappedProvider": ("rewardkit.pointwise", "MappedProvider"),
    "MetricContribution": ("rewardkit.contracts", "MetricContribution"),
    "MissingExtraError": ("rewardkit.extras", "MissingExtraError"),
    "NAME_PATTERN": ("rewardkit.contracts", "NAME_PATTERN"),
    "NEVER": ("rewardkit.cancellation", "NEVER"),
    "NotJSONError": ("rewardkit.frozen", "NotJSONError"),
    "ObservedBatch": ("rewardkit.observers", "ObservedBatch"),
    "ParamsError": ("rewardkit.params", "ParamsError"),
    "ParamsModel": ("rewardkit.params", "ParamsModel"),
    "PreflightError": ("rewardkit.errors", "PreflightError"),
    "PreparedRow": ("rewardkit.data", "PreparedRow"),
    "ProviderError": ("rewardkit.errors", "ProviderError"),
    "ProviderRecord": ("rewardkit.provenance", "ProviderRecord"),
    "ProviderRegistrar": ("rewardkit.protocols", "ProviderRegistrar"),
    "REPRODUCTION_NOTE": ("rewardkit.reproduction", "REPRODUCTION_NOTE"),
    "REWARD_FIELDS": ("rewardkit.worker", "REWARD_FIELDS"),
    "Ranks": ("rewardkit.bindings.ranks", "Ranks"),
    "RequestCancelled": ("rewardkit.errors", "RequestCancelled"),
    "RequestTimeout": ("rewardkit.errors", "RequestTimeout"),
    "RequestTooLarge": ("rewardkit.backpressure", "RequestTooLarge"),
    "RerunBudget": ("rewardkit.reproduction", "RerunBudget"),
    "RerunSpec": ("rewardkit.composition", "RerunSpec"),
    "RetryPolicy": ("rewardkit.transport", "RetryPolicy"),
    "RevisionNotBumpedWarning": ("rewardkit.provenance", "RevisionNotBumpedWarning"),
    "Reward": ("rewardkit.reward", "Reward"),
    "RewardAttackRegistrar": ("rewardkit.protocols", "RewardAttackRegistrar"),
    "RewardAttacks": ("rewardkit.attacks", "RewardAttacks"),
    "RewardBackendRegistrar": ("rewardkit.protocols", "RewardBackendRegistrar"),
    "RewardBackendSpec": ("rewardkit.extensions", "RewardBackendSpec"),
    "RewardExpansionRegistrar": ("rewardkit.protocols", "RewardExpansionRegistrar"),
    "RewardExpansionSpec": ("rewardkit.extensions", "RewardExpansionSpec"),
    "RewardCandidate": ("rewardkit.contracts", "RewardCandidate"),
    "RewardCandidateResult": ("rewardkit.contracts", "RewardCandidateResult"),
    "RewardContext": ("rewardkit.contracts", "RewardContext"),
    "RewardContractError": ("rewardkit.errors", "RewardContractError"),
    "RewardGroupRequest": ("rewardkit.contracts", "RewardGroupRequest"),
    "RewardGroupResult": ("rewardkit.contracts", "RewardGroupResult"),
    "RewardLike": ("rewardkit.protocols", "RewardLike"),
    "RewardProviderResult": ("rewardkit.contracts", "RewardProviderResult"),
    "RewardProviderSpec": ("rewardkit.contracts", "RewardProviderSpec"),
    "RewardSelection": ("rewardkit.config", "RewardSelection"),
    "RewardSpec": ("rewardkit.composition", "RewardSpec"),
    "RewardSpecError": ("rewardkit.composition", "RewardSpecError"),
    "RewardWorker": ("rewardkit.worker", "RewardWorker"),
    "RewardkitConfig": ("rewardkit.config", "RewardkitConfig"),
    "RewardkitError": ("rewardkit.errors", "RewardkitError"),
    "Scaling": ("rewardkit.advantages", "Scaling"),
    "ScoredBatch": ("rewardkit.scored", "ScoredBatch"),
    "ScoredCandidate": ("rewardkit.worker", "ScoredCandidate"),
    "ScoredGroup": ("rewardkit.scored", "ScoredGroup"),
    "Section": ("rewardkit.config", "Section"),
    "SelectionRefused": ("rewardkit.errors", "SelectionRefused"),
    "ServedModel": ("rewardkit.checkpoint_serving", "ServedModel"),
    "ServingStrategyRegistrar": ("rewardkit.protocols", "ServingStrategyRegistrar"),
    "Status": ("rewardkit.contracts", "Status"),
    "TrainerBindingRegistrar": ("rewardkit.protocols", "TrainerBindingRegistrar"),
    "WeightedMean": ("rewardkit.metrics", "WeightedMean"),
    "areproduce": ("rewardkit.reproduction", "areproduce"),
    "arithmetic_gold": ("rewardkit.builtin.answers", "arithmetic_gold"),
    "as_batch": ("rewardkit.batch_input", "as_batch"),
    "astream_of": ("rewardkit.stream", "astream_of"),
    "available_inputs": ("rewardkit.reward", "available_inputs"),
    "batch_parts": ("rewardkit.worker", "batch_parts"),
    "build_reward": ("rewardkit.reward", "build_reward"),
    "canonical_json": ("rewardkit.identity", "canonical_json"),
    "check_deadline": ("rewardkit.config", "check_deadline"),
    "check_resume_all": ("rewardkit.provenance", "check_resume_all"),
    "compose": ("rewardkit.composition", "compose"),
    "countdown_problem": ("rewardkit.builtin.countdown", "countdown_problem"),
    "current": ("rewardkit.cancellation", "current"),
    "entered": ("rewardkit.cancellation", "entered"),
    "evaluate": ("rewardkit.builtin.expressions", "evaluate"),
    "finish_split_batch": ("rewardkit.split_batch", "finish_split_batch"),
    "fold_lookalikes": ("rewardkit.text", "fold_lookalikes"),
    "freeze": ("rewardkit.frozen", "freeze"),
    "folder_identity": ("rewardkit.artifacts", "folder_identity"),
    "format_table": ("rewardkit.tables", "format_table"),
    "generated_part": ("rewardkit.bindings.decoded_queries", "generated_part"),
    "group_parts": ("rewardkit.worker", "group_parts"),
    "gsm8k_gold": ("rewardkit.builtin.answers", "gsm8k_gold"),
    "hookimpl": ("rewardkit.hookspecs", "hookimpl"),
    "import_optional": ("rewardkit.extras", "import_optional"),
    "install_line": ("rewardkit.extras", "install_line"),
    "is_blank": ("rewardkit.text", "is_blank"),
    "last_answer_tag": ("rewardkit.builtin.answers", "last_answer_tag"),
    "last_boxed": ("rewardkit.builtin.answers", "last_boxed"),
    "list_models": ("rewardkit.checkpoint_serving.contract", "list_models"),
    "load": ("rewardkit.reward", "load"),
    "load_config": ("rewardkit.config", "load_config"),
    "load_prompt_rows": ("rewardkit.data", "load_prompt_rows"),
    "map_candidates": ("rewardkit.pointwise", "map_candidates"),
    "merge_metrics": ("rewardkit.metrics", "merge_metrics"),
    "metric_name": ("rewardkit.metrics", "metric_name"),
    "moved_attribute": ("rewardkit.moved", "moved_attribute"),
    "non_empty": ("rewardkit.config", "non_empty"),
    "normalise_params": ("rewardkit.params", "normalise"),
    "normalise_text": ("rewardkit.text", "normalise"),
    "observer_for": ("rewardkit.observers", "observer_for"),
    "operator_only": ("rewardkit.params", "operator_only"),
    "operator_only_reason": ("rewardkit.params", "operator_only_reason"),
    "read_rollouts": ("rewardkit.data", "read_rollouts"),
    "reproduce": ("rewardkit.reproduction", "reproduce"),
    "rerun_budget": ("rewardkit.reproduction", "rerun_budget"),
    "resolve_catalog": ("rewardkit.catalog", "resolve_catalog"),
    "response_of": ("rewardkit.bindings.decoded_queries", "response_of"),
    "reward_attacks": ("rewardkit.attacks", "reward_attacks"),
    "run_bounded": ("rewardkit.cancellation", "run_bounded"),
    "retry_after_seconds": ("rewardkit.transport", "retry_after_seconds"),
    "run_sync": ("rewardkit.transport", "run_sync"),
    "serving_strategies": ("rewardkit.catalog", "serving_strategies"),
    "sha256_hex": ("rewardkit.identity", "sha256_hex"),
    "skeleton": ("rewardkit.text", "skeleton"),
    "spec_of": ("rewardkit.reward", "spec_of"),
    "strictly_equal": ("rewardkit.frozen", "strictly_equal"),
    "strip_eos": ("rewardkit.bindings.decoded_queries", "strip_eos"),
    "thaw": ("rewardkit.frozen", "thaw"),
    "timeout_of": ("rewardkit.cancellation", "timeout_of"),
    "usable_cpus": ("rewardkit.capacity", "usable_cpus"),
    "validate_params": ("rewardkit.params", "validate_params"),
    "visible": ("rewardkit.text", "visible"),
    "wait_for_model": ("rewardkit.checkpoint_serving", "wait_for_model"),
    "zero_variance_groups": ("rewardkit.metrics", "zero_variance_groups"),
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
        raise AttributeError(
            f"module 'rewardkit.plugin' has no attribute {name!r} (the plugin API is __all__)"
        )
    value = getattr(importlib.import_module(where[0]), where[1])
    globals()[name] = value  # later look-ups skip __getattr__
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
