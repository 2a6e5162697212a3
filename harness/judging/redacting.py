"""The judge boundary of the redaction policy: every message of every judge request is redacted
before it is sent, and every reply before a judge parses it or the cache keeps it.

Judge prompt builders redact what they render before they truncate it (so a secret cut in half
cannot slip through as a fragment); this wrapper is the catch-all at the wire, so a prompt part
a builder did not think of (a template override, a code grader's `judge(goal=...)`) still never
reaches a judge in clear. Replies are redacted because a judge may quote what it was shown, and
its reason is stored and reported.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..redaction import REDACTED, RedactionPolicy
from .provider import JudgeProvider, JudgeReply, JudgeRequest, TokenLogprob

__all__ = ["RedactingProvider"]


class RedactingProvider:
    """A `JudgeProvider` that redacts requests and replies around another provider."""

    def __init__(self, inner: JudgeProvider, policy: RedactionPolicy) -> None:
        self.inner = inner
        self.policy = policy

    def __getattr__(self, name: str) -> Any:  # name, model, advertised_knobs, settings...
        return getattr(self.inner, name)

    def pinned_knobs(self) -> dict[str, Any]:
        return self.inner.pinned_knobs()

    def identity(self) -> dict[str, Any]:
        return self.inner.identity()

    def redact_request(self, request: JudgeRequest) -> JudgeRequest:
        policy = self.policy
        messages = tuple(
            {k: policy.text(v) if isinstance(v, str) else v for k, v in m.items()}
            for m in request.messages
        )
        return replace(request, messages=messages)

    def redact_reply(self, reply: JudgeReply) -> JudgeReply:
        text = self.policy.text(reply.text)
        raw = self._raw(reply.raw) if reply.raw else reply.raw
        logprobs = self._tokens(reply.logprobs) if reply.logprobs else reply.logprobs
        if text == reply.text and raw == reply.raw and logprobs == reply.logprobs:
            return reply
        return replace(reply, text=text, raw=raw, logprobs=logprobs)

    def _raw(self, raw: dict[str, Any]) -> dict[str, Any]:
        """The provider's raw body, redacted; per-choice logprobs are left out: `reply.logprobs`
        holds them, redacted piece by piece (a token list cannot be redacted string by string)."""
        out = self.policy.value(raw, by_name=False)
        choices = out.get("choices") if isinstance(out, dict) else None
        if isinstance(choices, list):
            out["choices"] = [
                {k: v for k, v in c.items() if k != "logprobs"} if isinstance(c, dict) else c
                for c in choices
            ]
        return out

    def _tokens(self, tokens: tuple[TokenLogprob, ...]) -> tuple[TokenLogprob, ...]:
        """Logprob tokens spell the answer in pieces: a token overlapping a secret of the joined
        text is blanked (the one where the secret starts reads `(redacted)`), so no piece of it
        is kept, nor its alternatives; other alternatives are redacted one by one."""
        policy = self.policy
        spans = policy.spans("".join(t.token for t in tokens))
        out = []
        position = 0
        for t in tokens:
            start, end = position, position + len(t.token)
            position = end
            hit = next(((a, b) for a, b in spans if a < end and start < b), None)
            if hit is None:
                top = tuple((policy.text(alt), lp) for alt, lp in t.top)
                out.append(TokenLogprob(token=t.token, logprob=t.logprob, top=top))
            else:  # the alternatives at a secret's position are variants of the secret
                token = REDACTED if start <= hit[0] < end else ""
                out.append(TokenLogprob(token=token, logprob=t.logprob, top=()))
        return tuple(out)

    async def acomplete(self, request: JudgeRequest) -> JudgeReply:
        reply = await self.inner.acomplete(self.redact_request(request))
        return self.redact_reply(reply)
