"""The tool loop for one question: prompt blocks -> provider -> tools -> ... -> an answer.

The loop owns the soft deadline (`asyncio.timeout`), retries of transient provider failures
inside it, the cold-start explore guard, and keeping a question's in-flight tool output within
the model's hard context. It works on the window it is handed (a fork); committing and
persisting are the caller's job. An external cancellation (client hung up) always propagates.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar

from live_memory import constants as C
from live_memory.core import prompts
from live_memory.core.errors import PromptTooLongError, ProviderError
from live_memory.core.messages import (
    ChatRequest,
    ChatResponse,
    Message,
    Part,
    TextPart,
    ToolResultPart,
    ToolUsePart,
)
from live_memory.core.records import Usage
from live_memory.engine.compaction import CompactionReport
from live_memory.engine.pre_read import PreRead, pre_read
from live_memory.engine.prompt_layout import build_prompt
from live_memory.engine.question_names import found_definitions, location_kind, names_in, paths_in
from live_memory.engine.read_hold import hold_reads
from live_memory.engine.tool_runner import FileReadLike, ToolOutcomeLike, ToolRunner
from live_memory.fs.safe_files import read_for_revalidation
from live_memory.memory.cited_lines import citations, cut
from live_memory.memory.context_window import ContextWindow
from live_memory.memory.holding import admit_cited, hold_costs
from live_memory.memory.hot_set import HotSet, used_recently
from live_memory.memory.kept_answer import kept_answer
from live_memory.providers.base import ChatProvider
from live_memory.settings.options import LongCache

logger = logging.getLogger(__name__)
Done = TypeVar("Done")


LOOKUP_TOOL = "find_symbol"  # looks up the names a question mentions before the model sees it

# Called before the prompt is built (None) and after a prompt-too-long error (the provider's stated
# limit, 0 when it named none); `compaction.Compactor`, bound to the workspace, is the implementation.
CompactionHook = Callable[[ContextWindow, int | None], Awaitable[CompactionReport | None]]


@dataclass(frozen=True)
class LoopLimits:
    timeout_s: float
    max_iterations: int
    answer_tokens: int
    context_tokens: int
    force_explore_when_cold: bool
    reserve_s: float = C.FINAL_ANSWER_RESERVE_S  # kept back from the deadline for the wrap-up call
    retry_base_s: float = C.RETRY_BASE_DELAY_S  # the first retry's backoff; it doubles per attempt
    long_cache: LongCache = "off"
    question_names: int = C.QUESTION_NAMES_MAX  # names in the question looked up first (question_names.py)
    # What is worth holding is taken in (hot_set.py): files read whole, after each round (read_hold.py); lines the
    # answer cited, after it.
    hot_set: HotSet | None = None
    answer_chars: int = C.HISTORY_ANSWER_CHARS  # what the history keeps of an answer (kept_answer.py)
    pre_read_chars: int = 0  # what a question's files may hold to be read ahead (pre_read.py); 0: none


@dataclass
class LoopOutcome:
    """What the loop produced for one question, returned to the caller, which commits it and renders the trailer
    (the compactions made meanwhile are the compaction hook's, which the caller owns)."""

    answer: str
    usage: Usage = field(default_factory=Usage)
    tool_calls: int = 0
    files_read: list[str] = field(default_factory=list)
    tool_output_chars: int = 0  # what the tools returned to the model (the caller would have read it)
    timed_out: bool = False
    partial: str | None = None  # why the answer is incomplete, when the provider failed mid-way
    model: str = ""
    first_prompt_estimate: int = 0
    first_prompt_actual: int = 0


class Progress:
    """What a question is doing now. Its caller makes one and reads `now` whenever it reports on the question
    (a progress heartbeat); the answerer and the loop only write to it."""

    def __init__(self) -> None:
        self.now = "starting"

    def report(self, status: str) -> None:
        self.now = status


def held_ranges(window: ContextWindow) -> list[str]:
    """The lines the prompt already shows as they are now (held files, the hot set's cited lines), as
    `path:first-last`: a question's lookups show no code of a definition inside them (no paying twice)."""
    lines = {p: f.content.count("\n") + 1 for p, f in window.files.items() if f.content and f.state == "current"}
    return [f"{path}:1-{last}" for path, last in lines.items()] + [f"{p}:{a}-{b}" for p, a, b in window.cited]


class QuestionLoop:
    def __init__(
        self,
        provider: ChatProvider,
        tools: ToolRunner,
        tool_schemas: Sequence[Mapping[str, Any]],
        limits: LoopLimits,
        *,
        workspace_root: Path,
        cache_key: str | None = None,
        compactor: CompactionHook | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.provider = provider
        self.tools = tools
        self.tool_schemas = tuple(tool_schemas)
        self.limits = limits
        self.root = workspace_root
        self.cache_key = cache_key
        self.compactor = compactor
        self.clock = clock
        self.hard_limit = limits.context_tokens  # lowered when the provider names its real limit
        self.deadline = float("inf")
        self.reserve = 0.0
        self._timeout: asyncio.Timeout | None = None
        self.hint = ""
        self.cut_short = False  # the deadline was brought forward by a shutdown
        self.grounded = False  # the question's names were found in the current files (no cold nudge then)
        self.sent = 0  # requests of this question answered by the provider
        self.kept_reads = 0  # the transcript up to here is kept in the history: it shows files now held
        self._out = LoopOutcome(answer="")  # what `answer` is producing; returned at its end
        self._progress = Progress()

    async def _compact(self, window: ContextWindow, overflow_limit: int | None) -> None:
        if self.compactor is not None:
            await self.compactor(window, overflow_limit)

    async def answer(self, window: ContextWindow, question: str, progress: Progress | None = None) -> LoopOutcome:
        """Run the loop on `window` (mutated: deltas synced, reads recorded, exchange appended) and return what
        it produced; `progress` is told what it is doing as that changes."""
        self._progress = progress or Progress()
        out = self._out = LoopOutcome(answer="", model=self.provider.info.model)
        started = self.clock()
        self.deadline = started + self.limits.timeout_s
        self.reserve = min(self.limits.reserve_s, self.limits.timeout_s * 0.25)
        window.sync_deltas()
        await self._compact(window, None)
        definitions = await self._look_up_names_in_time(window, question)
        ahead = await self._in_time(self._pre_read(window, question), PreRead())
        # Definitions looked up and files read in the current files ground an answer even in an empty memory.
        self.grounded = bool(definitions) or bool(ahead.calls)
        hint = prompts.question_hint(
            time_budget_s=self.limits.timeout_s,
            answer_tokens=self.limits.answer_tokens,
            recently_modified=window.drain_recently_modified(),
            definitions=definitions,
            named_files=ahead.listed,
        )
        self.hint = hint
        question_message = Message("user", (TextPart(prompts.question_block(question)),))
        # The transcript is what this question sends after the history: the question, then tool turns (the
        # first one perhaps made by the loop itself: the files the question asks about, read ahead).
        transcript: list[Message] = [question_message, *ahead.messages]
        if await self._hold_round(window, ahead.outcomes):
            self.kept_reads = len(transcript)
        try:
            async with asyncio.timeout_at(self._loop_time(self.deadline - self.reserve)) as self._timeout:
                await self._run(window, transcript)
        except TimeoutError:
            out.timed_out = True
            self._progress.report("deadline reached; writing the best answer so far")
            await self._best_effort(window, transcript)
        except ProviderError as exc:
            if not out.tool_calls and not out.answer:
                raise  # nothing learned yet: the caller gets the provider's clear error
            # The provider failed mid-answer (a dropped connection, an outage): keep what was found.
            out.partial = f"the model endpoint failed before the answer was complete ({exc})"
            explored = f" Files examined: {', '.join(out.files_read)}." if out.files_read else ""
            out.answer = (out.answer + "\n\n" if out.answer else "") + f"[Partial answer: {out.partial}.{explored}]"
        finally:
            self._timeout = None
        kept = kept_answer(out.answer, self.limits.answer_chars)
        reads = transcript[1 : self.kept_reads]  # the rounds up to the last that showed a file now held
        window.add_exchange(
            question_message, question, kept, out.files_read, transcript[1:], sent_at=started, reads=reads
        )
        window.note_requests(self.sent)
        hot = self.limits.hot_set
        if hot is not None and hot.cited and out.answer:
            await self._hold_cited_lines(window, out.answer, hot)
        return out

    async def _look_up_names_in_time(self, window: ContextWindow, question: str) -> list[str]:
        """`_look_up_names` within the question's deadline (a shutdown's cut included): past it, none."""
        return await self._in_time(self._look_up_names(window, question), [])

    async def _in_time(self, work: Awaitable[Done], late: Done) -> Done:
        """`work`'s result within the question's deadline (a shutdown's cut included); past it, `late`."""
        try:
            async with asyncio.timeout_at(self._loop_time(self.deadline - self.reserve)) as self._timeout:
                return await work
        except TimeoutError:
            return late  # out of time: the loop below gives its best answer at once
        finally:
            self._timeout = None

    async def _pre_read(self, window: ContextWindow, question: str) -> PreRead:
        """The files the question asks about as a whole, read ahead (pre_read.py); recorded as read."""
        ahead = await pre_read(
            self.tools, window, question, max_files=C.PRE_READ_MAX_FILES, max_chars=self.limits.pre_read_chars
        )
        for outcome in ahead.outcomes:
            self._note_reads(window, outcome)
        return ahead

    async def _look_up_names(self, window: ContextWindow, question: str) -> list[str]:
        """find_symbol's answers for the names the question mentions (question_names.py), in parallel, the
        definitions in the files this memory used most recently first; the files they come from are known
        from here on, as if read (what is learned from them rests on them)."""
        names = names_in(question, self.limits.question_names)
        if not names:
            return []
        named = paths_in(question)  # the files the question means, then those this memory used most recently
        prefer = list(dict.fromkeys([*named, *used_recently(window.file_uses, C.SYMBOL_PREFER_MAX_PATHS)]))
        where = location_kind(question)  # a "where" question needs locations, not code
        kind, code = (where, False) if where is not None else ("definition", True)
        lookup = {"kind": kind, "code": code, "prefer": prefer, "held": held_ranges(window)}
        outcomes = await asyncio.gather(*(self.tools.run(LOOKUP_TOOL, {"name": name, **lookup}) for name in names))
        for outcome in outcomes:
            self._note_lookup(window, outcome)
        found = (found_definitions(o.text, o.is_error) for o in outcomes)
        return [text for text in found if text is not None]

    async def _hold_cited_lines(self, window: ContextWindow, answer: str, hot: HotSet) -> None:
        """Hold the lines the answer cited that the hot set takes (cited_lines.py): they reach the next
        question as a delta. Only lines of files whose bytes on disk are still what the window knows."""
        known = {p for p, f in window.files.items() if f.state == "current" and f.size <= hot.max_file_bytes}
        cited = [c for c in citations(answer, known) if (c.path, c.first, c.last) not in window.cited]
        if not cited:
            return
        paths = sorted({c.path for c in cited})
        disk = await asyncio.to_thread(read_for_revalidation, self.root, paths, paths, hot.max_file_bytes)
        costs = hold_costs(window, hot.read_share, hot.write_share)
        for citation in cited:
            found, known_file = disk.get(citation.path), window.files.get(citation.path)
            if found is None or found.text is None or known_file is None or found.sha256 != known_file.sha256:
                continue
            lines = cut(found.text, found.sha256, citation)
            if lines is not None:
                admit_cited(window, lines, hot.policy, costs)

    def cut_deadline(self, seconds_from_now: float) -> None:
        """Bring the soft deadline forward (shutdown): the loop then returns its best answer."""
        when = self.clock() + seconds_from_now
        if when >= self.deadline:
            return
        self.cut_short = True
        self.deadline = when
        self.reserve = min(self.reserve, seconds_from_now * 0.5)
        if self._timeout is not None:
            self._timeout.reschedule(self._loop_time(self.deadline - self.reserve))

    def _loop_time(self, when: float) -> float:
        """Translate a deadline on our clock to the event loop's clock."""
        return asyncio.get_running_loop().time() + max(when - self.clock(), 0.0)

    async def _run(self, window: ContextWindow, transcript: list[Message]) -> None:
        out = self._out
        guard_used = self.grounded or not (self.limits.force_explore_when_cold and window.cold)
        for iteration in range(self.limits.max_iterations):
            self._progress.report(f"thinking (turn {iteration + 1})")
            response = await self._call(window, transcript)
            if not response.tool_calls:
                if not guard_used and out.tool_calls == 0:
                    guard_used = True
                    transcript.append(response.as_message())
                    transcript.append(Message("user", (TextPart(prompts.COLD_EXPLORE_NUDGE),)))
                    continue
                out.answer = response.text.strip() or "(the model returned an empty answer)"
                return
            if response.text.strip():
                out.answer = response.text.strip()
            transcript.append(response.as_message())
            results, held = await self._run_tools(window, response)
            transcript.append(results)
            if held:
                self.kept_reads = len(transcript)
        # Out of tool turns: ask once for the answer from what was found.
        transcript.append(Message("user", (TextPart(prompts.ITERATIONS_NUDGE),)))
        response = await self._call(window, transcript)
        out.answer = response.text.strip() or out.answer or "(no answer within the tool-turn limit)"

    async def _run_tools(self, window: ContextWindow, response: ChatResponse) -> tuple[Message, bool]:
        """The round's results, and whether it showed a file the hot set now holds."""
        out = self._out
        names = ", ".join(c.name for c in response.tool_calls)
        self._progress.report(f"running {names}")
        outcomes = await asyncio.gather(*(self.tools.run(c.name, c.arguments) for c in response.tool_calls))
        parts: list[Part] = []
        for call, result in zip(response.tool_calls, outcomes, strict=True):
            out.tool_calls += 1
            out.tool_output_chars += 0 if result.is_error else len(result.text)
            if call.name == LOOKUP_TOOL:
                self._note_lookup(window, result)
            else:
                self._note_reads(window, result)
            parts.append(ToolResultPart(call.id, result.text, is_error=result.is_error))
        reads = [result for call, result in zip(response.tool_calls, outcomes, strict=True) if call.name == "Read"]
        return Message("user", tuple(parts)), await self._hold_round(window, reads)

    async def _hold_round(self, window: ContextWindow, reads: Sequence[ToolOutcomeLike]) -> bool:
        """Take the files a round of Reads showed whole into the hot set where worth it (read_hold.py)."""
        hot = self.limits.hot_set
        if hot is None or not hot.reads or not reads:
            return False
        return bool(await hold_reads(window, self.root, hot, reads))

    def _note_reads(self, window: ContextWindow, result: ToolOutcomeLike) -> None:
        for read in result.files_read:
            if read.path not in self._out.files_read:
                self._out.files_read.append(read.path)
                self._record_read(window, read)

    def _note_lookup(self, window: ContextWindow, result: ToolOutcomeLike) -> None:
        """A lookup's files ground what is learned from them; unlike a Read's, nothing of them joins the prompt."""
        for read in result.files_read:
            window.note_lookup(read.path, read.sha256)

    def _record_read(self, window: ContextWindow, read: FileReadLike) -> None:
        window.record_read(read.path, read.sha256, read.size)

    def _messages(self, window: ContextWindow, transcript: list[Message]) -> ChatRequest:
        system, messages = build_prompt(
            window,
            transcript,
            hint=self.hint,
            first_of_question=not self.sent,
            # The newest results are worth writing to the cache when the history is to keep them (a held file).
            lag_tail=_answer_likely_next(transcript) and self.kept_reads < len(transcript),
            long_cache=self.limits.long_cache,
        )
        return ChatRequest(
            system=system,
            messages=messages,
            max_tokens=self.limits.answer_tokens,
            tools=self.tool_schemas,
            cache_key=self.cache_key,
        )

    def _fit_transcript(self, window: ContextWindow, transcript: list[Message]) -> None:
        """Shorten the oldest tool results of this question when they crowd the hard context."""
        if not any(_shrinkable(m) for m in transcript[:-1]):
            return  # nothing could be shortened: skip sizing the whole prompt (O(history))
        allowance = int(self.hard_limit * 0.95) - window.prompt_tokens() - self.limits.answer_tokens
        allowance = max(allowance, int(self.hard_limit * 0.1))
        sizes = [sum(window.tokens(_part_text(p)) for p in m.parts) for m in transcript]
        total = sum(sizes)
        for index, message in enumerate(transcript):
            if total <= allowance or index >= len(transcript) - 1:  # the newest result stays whole
                break
            if not _shrinkable(message):
                continue
            shrunk = tuple(
                replace(p, content=prompts.SHRUNK_TOOL_RESULT) if isinstance(p, ToolResultPart) else p
                for p in message.parts
            )
            transcript[index] = Message("user", shrunk)
            new_size = sum(window.tokens(_part_text(p)) for p in shrunk)
            total -= sizes[index] - new_size
            sizes[index] = new_size

    async def _call(self, window: ContextWindow, transcript: list[Message]) -> ChatResponse:
        out = self._out
        compacted_for_overflow = False
        attempt = 0
        while True:
            self._fit_transcript(window, transcript)
            request = self._messages(window, transcript)
            try:
                response = await self.provider.chat(request)
            except PromptTooLongError as exc:
                if compacted_for_overflow or self.compactor is None:
                    raise
                compacted_for_overflow = True
                if exc.limit_tokens:
                    self.hard_limit = min(self.hard_limit, exc.limit_tokens)
                self._progress.report("prompt too long; compacting the memory and retrying")
                await self._compact(window, exc.limit_tokens or 0)
                continue
            except ProviderError as exc:
                delay = self._retry_delay(exc, attempt)
                if delay is None:
                    raise
                attempt += 1
                self._progress.report(f"provider busy; retrying in {delay:.1f}s")
                logger.info("retrying provider call in %.1fs after: %s", delay, exc)
                await asyncio.sleep(delay)
                continue
            self.sent += 1
            out.usage = out.usage + response.usage
            out.model = response.model or out.model
            if not out.first_prompt_actual:
                # The request is the window's persistent part (sized as a running total) + this question's tail.
                tail = request.messages[len(window.history) :]
                out.first_prompt_estimate = window.prompt_tokens() + sum(
                    window.tokens(_part_text(p)) for m in tail for p in m.parts
                )
                out.first_prompt_actual = response.usage.prompt_tokens
            return response

    def _retry_delay(self, exc: ProviderError, attempt: int) -> float | None:
        if not exc.retryable or attempt >= C.PROVIDER_MAX_RETRIES:
            return None
        hinted = getattr(exc, "retry_after_s", None)
        backoff = min(self.limits.retry_base_s * (2**attempt), C.RETRY_MAX_DELAY_S)
        delay = float(hinted) if hinted is not None else backoff * (0.5 + random.random())
        if self.clock() + delay >= self.deadline - self.reserve:
            return None
        return delay

    async def _best_effort(self, window: ContextWindow, transcript: list[Message]) -> None:
        """At the soft deadline: one bounded wrap-up call if there is material, else what we have."""
        out = self._out
        remaining = self.deadline - self.clock()
        # The deadline may fall while tools run: every tool call needs its result before any later turn
        # (providers refuse the request otherwise), and the transcript may be kept for the next question.
        unanswered = _unanswered_calls(transcript)
        closing = tuple(ToolResultPart(c.id, prompts.TOOL_NOT_RUN, is_error=True) for c in unanswered)
        if len(transcript) > 1 and remaining > 0.5:
            transcript.append(Message("user", (*closing, TextPart(prompts.DEADLINE_NUDGE))))
            try:
                async with asyncio.timeout(remaining):
                    response = await self._call(window, transcript)
                if response.text.strip():
                    out.answer = response.text.strip()
            except (TimeoutError, ProviderError) as exc:
                logger.info("wrap-up call at the deadline failed: %s", exc)
        elif closing:
            transcript.append(Message("user", closing))
        if not out.answer:
            explored = f" Files examined so far: {', '.join(out.files_read)}." if out.files_read else ""
            if self.cut_short:
                out.answer = (
                    "No complete answer: Live Memory is shutting down and cut this question short."
                    f"{explored} Ask again in a few seconds."
                )
            else:
                out.answer = (
                    f"No complete answer within the time budget ({self.limits.timeout_s:.0f}s); "
                    f"the model did not finish in time.{explored} Ask again, or narrow the question."
                )


def _unanswered_calls(transcript: Sequence[Message]) -> list[ToolUsePart]:
    """The tool calls of a last assistant turn that got no results (the deadline fell while they ran)."""
    if not transcript or transcript[-1].role != "assistant":
        return []
    return [p for p in transcript[-1].parts if isinstance(p, ToolUsePart)]


def _answer_likely_next(transcript: Sequence[Message]) -> bool:
    """After a round of only Reads the model usually answers, so nothing later reads those results from
    the cache; after searches and listings it usually reads next (see `build_prompt(lag_tail=)`)."""
    if len(transcript) < 2 or not any(isinstance(p, ToolResultPart) for p in transcript[-1].parts):
        return False
    calls = [p for p in transcript[-2].parts if isinstance(p, ToolUsePart)]
    return bool(calls) and all(c.name == "Read" for c in calls)


def _shrinkable(message: Message) -> bool:
    """A user turn carrying tool results (what `_fit_transcript` may shorten)."""
    return message.role == "user" and any(isinstance(p, ToolResultPart) for p in message.parts)


def _part_text(part: Part) -> str:
    if isinstance(part, TextPart):
        return part.text
    if isinstance(part, ToolResultPart):
        return part.content
    return part.name + str(dict(part.input))
