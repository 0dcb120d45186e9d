"""Calling other services over HTTP: deadlines, retries that can finish, tokens by reference."""

from rewardkit.transport.http import (
    HttpClient,
    HttpError,
    HttpResponse,
    HttpTimeout,
    RetryPolicy,
    bearer_token,
    retry_after_seconds,
    run_sync,
)

__all__ = [
    "HttpClient",
    "HttpError",
    "HttpResponse",
    "HttpTimeout",
    "RetryPolicy",
    "bearer_token",
    "retry_after_seconds",
    "run_sync",
]
