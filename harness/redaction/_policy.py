"""`RedactionPolicy`: the names and patterns of a run, applied to texts and values; and
`DeferredScan`, a policy whose value scan is put off to one joined pass."""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import re2

from ._patterns import (
    _AWS_FORTY,
    _AWS_SECRET_RUN,
    _MEMO_CHARS,
    _PAIR,
    _PROSE,
    _PROSE_WORDS,
    _URL_USERINFO,
    _VALUE_PATTERNS,
    _VIEW_DEPTH,
    REDACTED,
    SECRET_NAME_FRAGMENTS,
    _qualifies_as_aws_secret,
    _remember,
    compile_pattern,
    secret_env_values,
)

log = logging.getLogger("tracegrade.redaction")


@dataclass(frozen=True, slots=True)
class RedactionPolicy:
    """Which names and values are secrets. Immutable; build one per run."""

    names: tuple[str, ...] = ()
    """Extra secret-name fragments (case-insensitive substrings), beside the eleven built in."""
    patterns: tuple[str, ...] = ()
    """Extra value patterns (RE2 syntax), beside the built-in secret formats."""
    allow: tuple[str, ...] = ()
    """Literals never redacted: argument names (case-insensitive) and matched values (exact)."""
    answers: bool = True
    """False: the agent's answers are stored verbatim (the console says so on every run)."""
    env: tuple[str, ...] = ()
    """Extra environment variable names (or globs) whose values are masked, beside
    `SECRET_ENV_GLOBS`; the values are read from `os.environ` when the policy is built."""
    _fragments: tuple[str, ...] = field(init=False, repr=False, compare=False)
    _allowed_names: frozenset[str] = field(init=False, repr=False, compare=False)
    _allowed_values: frozenset[str] = field(init=False, repr=False, compare=False)
    _regex: Any = field(init=False, repr=False, compare=False)
    _aws: Any = field(init=False, repr=False, compare=False)
    _quick: Any = field(init=False, repr=False, compare=False)
    """The patterns and a 40-run in one alternation: a text it finds nothing in is kept."""
    _memo: dict[str, str] = field(init=False, repr=False, compare=False)
    """Short texts already scanned, and what they became (`text`)."""
    _names: dict[str, bool] = field(init=False, repr=False, compare=False)
    """Names already judged (`is_secret_name`)."""
    _joinable: bool = field(init=False, repr=False, compare=False)
    """No pattern anchored to a text's start or end: texts may be scanned joined (`clean`)."""

    def __post_init__(self) -> None:
        fragments = tuple(
            dict.fromkeys(f.lower() for f in (*SECRET_NAME_FRAGMENTS, *self.names) if f)
        )
        names = "|".join(re2.escape(f) for f in sorted(fragments, key=len, reverse=True))
        # Exact values first: at the same position they win over a pattern that would keep
        # part of them (the key of a pair). A JSON-escaped copy too (a value with a quote).
        masked = [v for v in secret_env_values(os.environ, self.env) if v not in set(self.allow)]
        escaped = [json.dumps(v)[1:-1] for v in masked]
        exact = sorted(set(masked) | set(escaped), key=len, reverse=True)
        alternatives = [f"(?P<env>{'|'.join(re2.escape(v) for v in exact)})"] if exact else []
        alternatives += [
            _PAIR.format(names=names),
            _URL_USERINFO,
            _PROSE.format(names=names),
            *_VALUE_PATTERNS,
        ]
        alternatives += [f"(?:{p})" for p in self.patterns]
        object.__setattr__(self, "_fragments", fragments)
        object.__setattr__(self, "_allowed_names", frozenset(a.lower() for a in self.allow))
        object.__setattr__(self, "_allowed_values", frozenset(self.allow))
        # One alternation, one linear scan per string.
        object.__setattr__(self, "_regex", compile_pattern("|".join(alternatives)))
        object.__setattr__(self, "_aws", compile_pattern(_AWS_SECRET_RUN[:-1]))
        # Most texts hold nothing to replace: one pass says so, where the patterns and the
        # 40-run took one each (a 10 MB tool result: two scans of it on the event loop).
        quick = "|".join([*alternatives, _AWS_FORTY.pattern])
        object.__setattr__(self, "_quick", compile_pattern(quick))
        # The policy never changes, so neither does what a text or a name becomes: the same
        # question, tool and grader texts recur in every trace a monitor grades.
        object.__setattr__(self, "_memo", {})
        object.__setattr__(self, "_names", {})
        # The built-in patterns' only anchors are \b (a newline is a non-word neighbour, as a
        # text's edge is) and the PEM block's \z (its (?s).*? reaches the joined text's end);
        # a config pattern with ^, $, \A or \z could match a text alone and not joined.
        anchored = any(c in p for p in self.patterns for c in ("^", "$", "\\A", "\\z"))
        object.__setattr__(self, "_joinable", not anchored)

    @classmethod
    def from_config(cls, block: Mapping[str, Any] | None) -> RedactionPolicy:
        """The policy of a config's `redaction:` block (already validated; None: defaults)."""
        block = block or {}
        return cls(
            names=tuple(str(n) for n in block.get("names") or ()),
            patterns=tuple(str(p) for p in block.get("patterns") or ()),
            allow=tuple(str(a) for a in block.get("allow") or ()),
            answers=bool(block.get("answers", True)),
            env=tuple(str(e) for e in block.get("env") or ()),
        )

    # -- names -------------------------------------------------------------------------------
    def is_secret_name(self, name: str) -> bool:
        """True when `name` contains a secret-name fragment and is not allowed."""
        if type(name) is str and len(name) <= _MEMO_CHARS:
            known = self._names.get(name)
            if known is None:
                known = self._is_secret_name(name)
                _remember(self._names, name, known)
            return known
        return self._is_secret_name(name)

    def _is_secret_name(self, name: str) -> bool:
        try:
            lowered = str(name).lower()
            if lowered in self._allowed_names:
                return False
            return any(fragment in lowered for fragment in self._fragments)
        except Exception:  # never raise on an exit path: treat the unreadable name as secret
            return True

    def mentions_secret_name(self, text: str) -> bool:
        """True when a secret-name fragment occurs anywhere in `text` (a cheap pre-check
        before parsing JSON text for secret-named keys)."""
        try:
            lowered = text.lower()
            return any(fragment in lowered for fragment in self._fragments)
        except Exception:
            return True

    # -- values ------------------------------------------------------------------------------
    def text(self, text: str) -> str:
        """`text` with every secret-looking value replaced by `(redacted)`."""
        if type(text) is str and len(text) <= _MEMO_CHARS:
            known = self._memo.get(text)
            if known is None:
                known = self._text(text)
                _remember(self._memo, text, known)
            return known
        return self._text(text)

    def _text(self, text: str) -> str:
        try:
            return self._scan(text)
        except UnicodeError:  # lone surrogates cannot reach RE2 (UTF-8): scan a clean copy
            try:
                return self._scan(text.encode("utf-8", "replace").decode("utf-8"))
            except Exception:
                return REDACTED
        except Exception:  # fail closed: a value that cannot be scanned does not leave
            log.warning("redaction failed on a %s value; replaced it whole", type(text).__name__)
            return REDACTED

    def _scan(self, text: str) -> str:
        if not isinstance(text, str):
            text = str(text)
        if not text or self._quick.search(text) is None:  # the common case: one C-level scan
            return text
        if self._regex.search(text) is not None:
            text = self._regex.sub(self._replace, text)
        # Only a run of exactly 40, unpadded, is replaced: look for one before the run-by-run
        # pass. Any long run of the alphabet (a 10 MB blob of one letter, base64) matched the
        # run pattern, and its sub copied the text through Python: 4-8x the cost of the scan.
        if _AWS_FORTY.search(text) is not None:
            text = self._aws.sub(self._replace_aws, text)
        return text

    def clean(self, texts: Iterable[str]) -> bool:
        """True when `text()` leaves every one of `texts` as it is, decided by one scan of
        them joined by newlines (a page of thousands of short texts: one search instead of
        one each). False means only "maybe not": scan them one by one."""
        if not self._joinable:
            return False
        try:
            joined = "\n".join(texts)
            if self._quick.search(joined) is None:
                return True
            if self._regex.search(joined) is not None:
                return False
            # a long run (a hash, padding) is common and kept unless it is an AWS secret, which
            # is a run of exactly 40, unpadded: none such, nothing to judge run by run (a
            # newline ends a run as a text's end does, so each run is judged as alone)
            if _AWS_FORTY.search(joined) is None:
                return True
            return all(self._replace_aws(m) != REDACTED for m in self._aws.finditer(joined))
        except Exception:  # a lone surrogate, a non-str: the one-by-one scan copes
            return False

    def _replace_aws(self, match: Any) -> str:
        run = match.group(0)
        end = match.end()
        padded = end < len(match.string) and match.string[end] == "="
        if padded or not _qualifies_as_aws_secret(run) or run in self._allowed_values:
            return run
        return REDACTED

    @staticmethod
    def _parts(match: Any) -> tuple[str, str, str]:
        """(kept prefix, secret value, kept suffix) of one match."""
        for key, value, tail in (
            ("key", "value", ""),
            ("ukey", "uvalue", "utail"),
            ("pkey", "pvalue", ""),
        ):
            if match.group(key) is not None:
                return match.group(key), match.group(value), match.group(tail) if tail else ""
        return "", match.group(0), ""

    def _replace(self, match: Any) -> str:
        key, value, tail = self._parts(match)
        if self._allowed(match, key, value):
            return match.group(0)
        return key + REDACTED + tail

    def _allowed(self, match: Any, key: str, value: str) -> bool:
        if value in self._allowed_values:
            return True
        if match.group("pkey") is not None:
            return value.rstrip(".!?:").lower() in _PROSE_WORDS
        if match.group("key") is None:
            return False
        return key.rstrip(" \t=:\"'").lower() in self._allowed_names

    def spans(self, text: str) -> list[tuple[int, int]]:
        """(start, end) of every secret `text()` would replace (a `key=value` pair: the value).
        For text that arrives in pieces (a judge's logprob tokens)."""
        try:
            out = []
            for match in self._regex.finditer(text):
                key, value, _ = self._parts(match)
                if not self._allowed(match, key, value):
                    start = match.start() + len(key)
                    out.append((start, start + len(value)))
            for match in self._aws.finditer(text):
                if self._replace_aws(match) == REDACTED:
                    out.append((match.start(), match.end()))
            return sorted(out)
        except Exception:
            return [(0, len(text))] if isinstance(text, str) else []

    def answer(self, text: str) -> str:
        """An agent answer as stored: redacted, unless the config keeps answers verbatim."""
        return self.text(text) if self.answers else text

    def arguments(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """A copy of `arguments` with secret-named values replaced and string values scrubbed,
        recursively. Shapes are kept; nothing is truncated here."""
        try:
            return self._mapping(arguments, True)
        except Exception:
            return {"": REDACTED}

    def value(self, value: Any, *, name: Any = "", by_name: bool = True) -> Any:
        """Any JSON-like value (str, mapping, list, scalar) redacted by value and, unless
        `by_name` is False (settings whose keys merely look like secrets), by key name."""
        try:
            if by_name and name and self.is_secret_name(str(name)):
                return REDACTED
            # Exact JSON types first: `isinstance(value, Mapping)` is an ABC check, and this
            # runs for every key and item of every row a run commits.
            kind = type(value)
            if kind is str:
                return self.text(value)
            if kind is dict:
                return self._mapping(value, by_name)
            if kind is list:
                return [self.value(v, by_name=by_name) for v in value]
            if value is None or kind is bool or kind is int or kind is float:
                return value
            if isinstance(value, str):
                return self.text(value)
            if isinstance(value, Mapping):
                return self._mapping(value, by_name)
            if isinstance(value, (list, tuple)):
                return [self.value(v, by_name=by_name) for v in value]
            if value is None or isinstance(value, (bool, int, float)):
                return value
            return self.text(str(value))  # anything else leaves as its redacted text
        except Exception:
            return REDACTED

    def _mapping(self, value: Mapping[Any, Any], by_name: bool) -> dict[Any, Any]:
        # A key is text the agent chose too (a tool call's argument names): scanned like any
        # value. Two keys redacted alike both stay, the later one numbered.
        out: dict[Any, Any] = {}
        for name, item in value.items():
            key = self.text(name) if type(name) is str else name
            if key in out:
                n = 2
                while f"{key} ({n})" in out:
                    n += 1
                key = f"{key} ({n})"
            out[key] = self.value(item, name=name, by_name=by_name)
        return out

    def view(self, value: Any, *, by_name: bool = True) -> Any:
        """`value(value)` for a caller that only reads the result (serializes it): where
        nothing in `value` would be redacted, `value` itself, not a copy. Decided by one walk
        that checks the keys' names and one scan of the texts not already known (`clean`)
        instead of a call per key and item; anything else (a secret, a type beside JSON's)
        takes `value()`'s own walk, so the result is always what `value()` returns."""
        if self._unchanged(value, by_name):
            return value
        return self.value(value, by_name=by_name)

    def _unchanged(self, value: Any, by_name: bool) -> bool:
        try:
            names, memo, unknown = self._names, self._memo, []
            pending = [(value, 0)]
            while pending:
                item, depth = pending.pop()
                kind = type(item)
                if kind is str:
                    leaves: Iterable[Any] = (item,)
                elif kind is dict:
                    for key in item:  # keys are scanned like texts (`_mapping`)
                        if type(key) is str:
                            known = memo.get(key)
                            if known is None:
                                unknown.append(key)
                            elif known != key:
                                return False
                    if by_name:
                        for key in item:
                            secret = names.get(key) if type(key) is str else None
                            if secret is None:
                                secret = bool(key) and self.is_secret_name(str(key))
                            if secret:
                                return False
                    leaves = item.values()
                elif kind is list:
                    leaves = item
                elif item is None or kind is bool or kind is int or kind is float:
                    continue
                else:  # a tuple, another mapping, any object: value() says what it becomes
                    return False
                if depth > _VIEW_DEPTH:  # value()'s recursion decides what a deep one becomes
                    return False
                for leaf in leaves:
                    kind = type(leaf)
                    if kind is str:
                        known = memo.get(leaf)
                        if known is None:
                            unknown.append(leaf)
                        elif known != leaf:
                            return False
                    elif not (leaf is None or kind is bool or kind is int or kind is float):
                        pending.append((leaf, depth + 1))
            if not unknown:
                return True
            if not self.clean(unknown):
                return False
            for text in unknown:  # what text() would have remembered: each as it is
                if len(text) <= _MEMO_CHARS:
                    _remember(memo, text, text)
            return True
        except Exception:  # value()'s own walk copes (or fails closed)
            return False


class DeferredScan:
    """Stands in for `policy` while one thing is built from many texts: the name rule applies
    at once, the value scan is put off: `text()` keeps each text as it is and notes it. Then
    `clean()` scans them all in one search; when it says True, what was built is exactly what
    `policy` would have built, else build it again with `policy` itself."""

    __slots__ = ("answers", "policy", "texts", "unsure")

    def __init__(self, policy: RedactionPolicy) -> None:
        self.policy = policy
        self.answers = policy.answers
        self.texts: list[str] = []
        self.unsure = False
        """A value `text()` would have turned into text: only the policy itself says how."""

    def clean(self) -> bool:
        return not self.unsure and self.policy.clean(self.texts)

    def is_secret_name(self, name: str) -> bool:
        return self.policy.is_secret_name(name)

    def text(self, text: str) -> str:
        if type(text) is str:
            self.texts.append(text)
        else:
            self.unsure = True
        return text

    def answer(self, text: str) -> str:
        return self.text(text) if self.answers else text

    # the policy's own walks, with this object's text() and is_secret_name()
    def arguments(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        return RedactionPolicy.arguments(self, arguments)  # type: ignore[arg-type]

    def value(self, value: Any, *, name: Any = "", by_name: bool = True) -> Any:
        return RedactionPolicy.value(self, value, name=name, by_name=by_name)  # type: ignore[arg-type]

    def _mapping(self, value: Mapping[Any, Any], by_name: bool) -> dict[Any, Any]:
        return RedactionPolicy._mapping(self, value, by_name)  # type: ignore[arg-type]
