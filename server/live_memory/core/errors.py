"""One exception tree for Live Memory. Foreign errors (SDK, httpx2, OS) are translated at one boundary.

Every error the package raises is a LiveMemoryError. The ones a caller is told as they are (the MCP boundary, a
background job and a workspace load pass them on in their own words) are a ReportedError; the others are caught
close to where they are raised, each family at its own layer's boundary (the tools' become a result the model
can correct, the command line's an exit, a request's an HTTP status), and must not be passed on as-is. A builtin
named in brackets is a second base: it says how callers treat the error (an OSError is "cannot read or write", a
ValueError "bad input").

LiveMemoryError
├── ReportedError               told to the caller in its own words
│   ├── ConfigError             invalid option value; names the key and where it came from
│   ├── InputError              a caller's request cannot be served as given (relative cwd, ...)
│   ├── JailRefusal             a path resolves outside the workspace, or is withheld (secret, .git)
│   ├── BusyError               admission is full; carries retry_after_s
│   ├── WorkspaceLoadError      a workspace could not be loaded (others keep working)
│   ├── BudgetExceededError     a daily spend cap is reached
│   ├── TeamStoreError          the team store (PostgreSQL) failed or did not answer in time; URL masked
│   └── ProviderError           anything the model endpoint did wrong; raised only by providers/
│       ├── NoCredentialError   no API key and no usable subscription credential
│       ├── AuthError           the endpoint rejected the credential (401/403)
│       ├── RateLimitedError    429; carries retry_after_s (None for a spend cap)
│       ├── OverloadedError     529 / 503 / 5xx: transient on the provider's side
│       ├── PromptTooLongError  the prompt exceeds the model's context; carries the parsed limit
│       ├── ProviderTimeoutError  the request timed out or the connection dropped
│       └── BadRequestError     any other 4xx the provider returned
├── ClientError                 a CLI command cannot go on (no server, a foreign one); the CLI prints it, exits 1
├── RequestError                an HTTP request's body or query is invalid; carries the status and detail
├── TooManyDirectories          a workspace has more directories than the OS watcher may watch
├── GrepError                   a search could not run as asked (a bad regex); the message is for the model
├── GitFailure                  git could not answer; the message is for the model
├── IndexStopped                a stopping server's symbol index build gives up between two files
├── ArgumentError               (ValueError) a tool argument is missing or malformed
├── GlobError                   (ValueError) a glob cannot be compiled
├── JsoncError                  (ValueError) an agent's configuration is not JSON (with comments); line, column
├── NotRegularFileError         (OSError) refused: a FIFO, device, directory or link where a file is read
└── SnapshotNotSaved            (OSError) a snapshot could not be written; carries the reason in words
"""

from __future__ import annotations

import stat
from typing import Any


class LiveMemoryError(Exception):
    """The root: every error Live Memory raises on purpose is one."""


class ReportedError(LiveMemoryError):
    """An error the caller is told in its own words: the MCP boundary, a background job and a workspace load
    pass it on as it is."""


class ConfigError(ReportedError):
    """An option has an invalid value; the message names the key and its source."""


class InputError(ReportedError):
    """A request cannot be served as given; the message says how to fix it."""


class JailRefusal(ReportedError):
    """A file access was refused: outside the workspace, or withheld by policy."""


class BusyError(ReportedError):
    """Admission is full for this workspace."""

    def __init__(self, message: str, retry_after_s: float) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class BudgetExceededError(ReportedError):
    """A daily spend cap is reached."""


class WorkspaceLoadError(ReportedError):
    """A workspace could not be loaded; the message says which and why."""


class TeamStoreError(ReportedError):
    """The team store could not be reached, answered too late, or refused; the message masks credentials."""


class ProviderError(ReportedError):
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


# --- caught close to where they are raised (see the module docstring) ---------------------------------------


class ClientError(LiveMemoryError):
    """A client command cannot go on; the message says why and what to do. The CLI prints it and exits 1."""


class RequestError(LiveMemoryError):
    """A request cannot be served as sent; routes answer `status` with the message and `detail`."""

    def __init__(self, status: int, message: str, detail: Any = None) -> None:
        super().__init__(message)
        self.status = status
        self.detail = detail


class TooManyDirectories(LiveMemoryError):
    """The workspace has more directories than the OS watcher may watch; it relies on the hooks instead."""


class GrepError(LiveMemoryError):
    """The search could not run as asked (a bad regex); the message is for the model."""


class GitFailure(LiveMemoryError):
    """git could not answer; the message is for the model."""


class IndexStopped(LiveMemoryError):
    """The server is stopping: a symbol index build or refresh in its thread gives up between two files (what it
    wrote holds: each file's record carries its own stamp, and a new index is renamed into place only when
    complete)."""


class ArgumentError(LiveMemoryError, ValueError):
    """A tool argument is missing or malformed; the message names it and the fix."""


class GlobError(LiveMemoryError, ValueError):
    """A glob that cannot be compiled (e.g. a reversed range "[z-a]"); the message says which."""


class JsoncError(LiveMemoryError, ValueError):
    """A text is not JSON (comments and trailing commas allowed); `line` and `column` say where, as an editor
    counts them."""

    def __init__(self, message: str, line: int, column: int) -> None:
        super().__init__(f"line {line}, column {column}: {message}")
        self.line, self.column = line, column


class NotRegularFileError(LiveMemoryError, OSError):
    """Refused: the path is not a regular file (or a symbolic link stands where none is followed).

    An OSError, so callers that treat "cannot read" alike need no extra clause. `mode` is the file
    type found (st_mode bits), `kind` says it in words ("a FIFO (named pipe)", "a directory", ...),
    `path` is the path (or, beneath a root, the leading components) concerned.
    """

    def __init__(self, path: str, mode: int, *, expected: str = "a regular file") -> None:
        self.path = path
        self.mode = mode
        self.kind = describe_mode(mode)
        super().__init__(f"'{path}' is {self.kind}, not {expected}")

    @property
    def is_link(self) -> bool:
        return stat.S_ISLNK(self.mode)


class SnapshotNotSaved(LiveMemoryError, OSError):
    """A snapshot could not be written; `reason` says why in words an operator can act on."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def describe_mode(mode: int) -> str:
    """What a file of this st_mode is, for a message ("a FIFO (named pipe)", "a directory", ...)."""
    if stat.S_ISREG(mode):
        return "a regular file"
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device file"
    if stat.S_ISLNK(mode):
        return "a symbolic link (not followed)"
    return "not a regular file"
