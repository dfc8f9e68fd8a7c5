"""What the history keeps of an answer: its lead and where the rest pointed.

Every later request re-reads the history (a cache read each time) and first writes each new answer into the
cache (at the 1-hour rate when `long_cache` is `history`), so an answer costs the memory again on every
question until it folds into the ledger. The agent has the full answer already; what later questions need from
it is what the system prompt asks an answer to lead with, the direct answer, and the `path:first-last` lines it
was grounded in (where to read again, and the names it tied to them). The history keeps those: the answer's
first line and the lines after it up to a paragraph break or `lead_chars`, then the citations of the rest,
each once. Measured by bench/session_bill.py (see constants.HISTORY_ANSWER_CHARS).
"""

from __future__ import annotations

from live_memory.core.prompts import answer_rest_note
from live_memory.memory.cited_lines import CITATION


def kept_answer(answer: str, lead_chars: int) -> str:
    """`answer` as the history keeps it: whole when it fits in `lead_chars` (or `lead_chars` is 0), else its
    lead (whole lines: the first always, the next ones to a blank line or `lead_chars`) and a note naming the
    citations of the rest that the lead does not name."""
    if lead_chars <= 0 or len(answer) <= lead_chars:
        return answer
    lines = answer.split("\n")
    lead, size = [lines[0]], len(lines[0])
    for line in lines[1:]:
        if not line.strip() or size + 1 + len(line) > lead_chars:
            break
        lead.append(line)
        size += 1 + len(line)
    head = "\n".join(lead)
    if head == answer:
        return answer  # one line longer than the lead: nothing else to leave out
    named = {match.group(0) for match in CITATION.finditer(head)}
    rest: dict[str, None] = {}
    for match in CITATION.finditer(answer, len(head)):
        if match.group(0) not in named:
            rest.setdefault(match.group(0), None)
    return f"{head}\n{answer_rest_note(list(rest))}"
