"""One exception tree for Live Memory. Foreign errors (SDK, httpx2, OS) are translated at one boundary.

LiveMemoryError
├── ConfigError                 invalid option value; names the key and where it came from
├── InputError                  a caller's request cannot be served as given (relative cwd, ...)
├── JailRefusal                 a path resolves outside the workspace, or is withheld (secret, .git)
├── BusyError                   admission is full; carries retry_after_s
├── WorkspaceLoadError          a workspace could not be loaded (others keep working)
├── BudgetExceededError         a daily spend cap is reached
└── ProviderError               anything the model endpoint did wrong; raised only by providers/
    ├── NoCredentialError       no API key and no usable subscription credential
    ├── AuthError               the endpoint rejected the credential (401/403)
    ├── RateLimitedError        429; carries retry_after_s (None for a spend cap)
    ├── OverloadedError         529 / 503 / 5xx: transient on the provider's side
    ├── PromptTooLongError      the prompt exceeds the model's context; carries the parsed limit
    ├── ProviderTimeoutError    the request timed out or the connection dropped
    └── BadRequestError         any other 4xx the provider returned
"""

from __future__ import annotations


class LiveMemoryError(Exception):
    """Base of every error Live Memory raises on purpose."""


class ConfigError(LiveMemoryError):
    """An option has an invalid value; the message names the key and its source."""


class InputError(LiveMemoryError):
    """A request cannot be served as given; the message says how to fix it."""


class JailRefusal(LiveMemoryError):
    """A file access was refused: outside the workspace, or withheld by policy."""


class BusyError(LiveMemoryError):
    """Admission is full for this workspace."""

    def __init__(self, message: str, retry_after_s: float) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class BudgetExceededError(LiveMemoryError):
    """A daily spend cap is reached."""


class WorkspaceLoadError(LiveMemoryError):
    """A workspace could not be loaded; the message says which and why."""


class ProviderError(LiveMemoryError):
    """The model endpoint failed. `retryable` says whether trying again later may succeed."""

    retryable = False

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class NoCredentialError(ProviderError):
    """Neither an API key nor a usable subscription credential is configured."""


class AuthError(ProviderError):
    """The endpoint rejected the credential."""


class RateLimitedError(ProviderError):
    """HTTP 429. A 429 without retry-after is a spend cap: retrying will not help."""

    def __init__(self, message: str, *, status: int | None = 429, retry_after_s: float | None = None) -> None:
        super().__init__(message, status=status)
        self.retry_after_s = retry_after_s
        self.retryable = retry_after_s is not None


class OverloadedError(ProviderError):
    """The provider is overloaded or failed on its side (529, 503, other 5xx)."""

    retryable = True


class PromptTooLongError(ProviderError):
    """The prompt does not fit the model's context window."""

    def __init__(self, message: str, *, status: int | None = 400, limit_tokens: int | None = None) -> None:
        super().__init__(message, status=status)
        self.limit_tokens = limit_tokens


class ProviderTimeoutError(ProviderError):
    """The request timed out or the connection dropped before an answer."""

    retryable = True


class BadRequestError(ProviderError):
    """Any other client error the provider reported."""
