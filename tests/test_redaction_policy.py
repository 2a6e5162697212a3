"""The redaction policy: every secret kind in every channel, the config's additions, answers
kept verbatim on request, and no input that makes redaction throw or stall."""

from __future__ import annotations

import asyncio
import json
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.runs_support import write_project
from tracegrade import JudgeReply, JudgeRequest, QuestionAnswer, QuestionResult
from tracegrade.capture.tracefile import redacted_attributes
from tracegrade.cli import main
from tracegrade.judging.provider import TokenLogprob
from tracegrade.judging.redacting import RedactingProvider
from tracegrade.redaction import DEFAULT_POLICY, REDACTED, RedactionPolicy
from tracegrade.rundir.store import ResultStore
from tracegrade.verdicts.scoring import GraderVerdict, score_question

# (as planted, the part that must not survive): one of every kind.
KINDS = [
    ("sk-A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8S9t0U1v2W3x4", "A1b2C3d4E5f6G7h8I9j0K1l2"),
    ("sk-proj-Zx9_Yw8-Vu7Ts6Rq5Po4Nm3Lk2Ji1", "Zx9_Yw8-Vu7Ts6Rq5Po4Nm3"),
    ("AKIAQWERTYUIOPASDFGH", "AKIAQWERTYUIOPASDFGH"),
    ("ghp_abcdEFGHijklMNOPqrstUVWXyz0123456789", "abcdEFGHijklMNOPqrstUVWX"),
    ("Bearer bt0k3n.Abc-Def_Ghi~Jkl", "bt0k3n.Abc-Def_Ghi~Jkl"),
    ("xBearer gluedT0kenValue1234", "gluedT0kenValue1234"),
    ("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhbmEifQ.c2lnbmF0dXJl", "eyJzdWIiOiJhbmEifQ.c2lnbmF0dXJl"),
    (
        "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIPemLine\n-----END EC PRIVATE KEY-----",
        "MHcCAQEEIPemLine",
    ),
    ("password=Hunter2Plaintext", "Hunter2Plaintext"),
    ("token: TokValuePlain77", "TokValuePlain77"),
    ('"client_secret": "SecValuePlain88"', "SecValuePlain88"),
    ("https://h.test/x?user=ana&password=UrlPassw0rd", "UrlPassw0rd"),
    ("Authorization: Bearer hdrT0kenValue99", "hdrT0kenValue99"),
    ("postgres://admin:Pg4dm1nPw@db.internal:5432/prod", "Pg4dm1nPw"),
    ("wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"),
    ("my password is ProsePw0rd", "ProsePw0rd"),
]

filler = st.text(alphabet="abc XYZ.,:;\n{}[]é日", max_size=12)


def _mixed(draw_pieces: list) -> tuple[str, list[str]]:
    text = " ".join(p if isinstance(p, str) else p[0] for p in draw_pieces)
    cores = [p[1] for p in draw_pieces if not isinstance(p, str)]
    return text, cores


def _store_channel(text: str, tmp, *, policy: RedactionPolicy = DEFAULT_POLICY) -> str:
    path = tmp / f"s{time.perf_counter_ns()}.sqlite"
    with ResultStore(path, redaction=policy) as store:
        grading = store.new_grading(mode="run")
        answer = QuestionAnswer(
            row={"id": "q", "input": text, "metadata": {"context": text}},
            input=text,
            messages=[{"role": "user", "content": text}],
            response=text,
        )
        grade = GraderVerdict(
            grader_id="g",
            score=None,
            min_score=0,
            max_score=1,
            reason=text,
            error=True,
            checks=[{"id": "c", "reason": text, "evidence": {"policy": text}}],
        )
        result = QuestionResult(id="q", target="t", graders=[grade], error=text, answer=answer)
        store.commit_question(score_question(result), grading_id=grading)
    data = path.read_bytes().decode("utf-8", "replace")
    path.unlink()
    return data


def _span_channel(text: str, *, policy: RedactionPolicy = DEFAULT_POLICY) -> str:
    attributes = {
        "gen_ai.tool.call.arguments": json.dumps({"q": text, "nested": [text]}),
        "gen_ai.tool.call.result": text,
        "exception.message": text,
        "input.value": text,
    }
    return json.dumps(redacted_attributes(attributes, truncate_to=4096, policy=policy))


class _Echo:
    """A provider that answers with what it was sent, token by token."""

    name, model, advertised_knobs = "echo", "m", frozenset()

    def identity(self):
        return {}

    def pinned_knobs(self):
        return {}

    async def acomplete(self, request):
        text = "\n".join(m["content"] for m in request.messages)
        tokens = tuple(TokenLogprob(token=t, logprob=0.0, top=((t, 0.0),)) for t in text)
        return JudgeReply(text=text, logprobs=tokens, raw={"choices": [{"message": text}]})


def _judge_channel(text: str, *, policy: RedactionPolicy = DEFAULT_POLICY) -> str:
    seen: list[JudgeRequest] = []
    echo = _Echo()
    inner = echo.acomplete

    async def recording(request):
        seen.append(request)
        # The judge also answers with the raw text, as if it had seen it.
        reply = await inner(JudgeRequest(messages=({"role": "user", "content": text},)))
        return reply

    echo.acomplete = recording
    reply = asyncio.run(
        RedactingProvider(echo, policy).acomplete(
            JudgeRequest(
                messages=({"role": "system", "content": "x"}, {"role": "user", "content": text})
            )
        )
    )
    sent = json.dumps([dict(m) for r in seen for m in r.messages])
    kept = "".join(t.token for t in reply.logprobs or ()) + "".join(
        a for t in reply.logprobs or () for a, _ in t.top
    )
    return sent + reply.text + json.dumps(reply.raw) + kept


@settings(max_examples=60, deadline=None)
@given(pieces=st.lists(st.one_of(st.sampled_from(KINDS), filler), min_size=1, max_size=8))
def test_every_secret_kind_in_text_of_every_channel_is_redacted(pieces, tmp_path_factory):
    text, cores = _mixed(pieces)
    tmp = tmp_path_factory.mktemp("store")
    channels = {
        "text": DEFAULT_POLICY.text(text),
        "arguments": json.dumps(DEFAULT_POLICY.arguments({"note": text, "list": [{"x": text}]})),
        "span": _span_channel(text),
        "store": _store_channel(text, tmp),
        "judge": _judge_channel(text),
    }
    for channel, out in channels.items():
        for core in cores:
            assert core not in out, (channel, core)


@given(
    name=st.sampled_from(["api_key", "DB_PASSWORD", "x-auth-token", "refreshToken"]),
    value=st.text(min_size=1, max_size=20),
)
def test_secret_named_arguments_are_redacted_in_any_shape(name, value):
    out = DEFAULT_POLICY.value({"outer": {name: value, "list": [{name: [value]}]}})
    assert out == {"outer": {name: REDACTED, "list": [{name: REDACTED}]}}


def test_config_names_patterns_and_allow_extend_the_policy():
    policy = RedactionPolicy(
        names=("pin",),
        patterns=(r"ACME-[0-9]{6}",),
        allow=("max_tokens", "sk-test-0000000000000000published"),
    )
    out = policy.value(
        {
            "card_pin": "1234",
            "max_tokens": 50,
            "note": "id ACME-123456 and sk-test-0000000000000000published and sk-liveABCDEFGHIJKLMNOP",
        }
    )
    assert out["card_pin"] == REDACTED and out["max_tokens"] == 50
    assert out["note"] == (f"id {REDACTED} and sk-test-0000000000000000published and {REDACTED}")
    assert DEFAULT_POLICY.value({"max_tokens": 50}) == {"max_tokens": REDACTED}


def test_a_text_seen_again_is_redacted_again_each_policy_by_its_own_rules():
    text = "order ACME-123456 for ana, password=Hunter2Plaintext"
    acme = RedactionPolicy(names=("nan",), patterns=(r"ACME-[0-9]{6}",))
    for _ in range(3):  # what a policy remembers of a text is what its rules made of it
        assert "Hunter2Plaintext" not in DEFAULT_POLICY.text(text)
        assert "ACME-123456" in DEFAULT_POLICY.text(text)
        assert "ACME-123456" not in acme.text(text) and "Hunter2Plaintext" not in acme.text(text)
        assert acme.is_secret_name("banana") and not DEFAULT_POLICY.is_secret_name("banana")
    long = "x " * 3000 + text  # longer than a policy remembers: scanned every time
    assert "Hunter2Plaintext" not in DEFAULT_POLICY.text(long)
    assert "ACME-123456" not in acme.text(long)


def test_a_pattern_that_does_not_compile_is_exit_4_naming_file_line_and_key(tmp_path, capsys):
    path = write_project(
        tmp_path, config={"redaction": {"patterns": ["ok-[0-9]+", "(?<=look)behind"]}}
    )
    assert main(["run", "--config", str(path)]) == 4
    err = capsys.readouterr().err
    line = path.read_text().splitlines().index("  - (?<=look)behind") + 1
    assert f"{path}:{line}" in err and "/redaction/patterns/1" in err and "RE2" in err
    assert main(["validate", str(path)]) == 4


def test_unknown_redaction_key_is_exit_4(tmp_path, capsys):
    path = write_project(tmp_path, config={"redaction": {"pattern": ["x"]}})
    assert main(["run", "--config", str(path)]) == 4
    assert "/redaction" in capsys.readouterr().err


def _answer_of(run_dir) -> str:
    with ResultStore.in_run_dir(run_dir) as store:
        (stored,) = store.load_runs()
    return stored.answer.response


def test_answers_false_stores_answers_verbatim_and_says_so_every_run(tmp_path, capsys):
    secret = "sk-proj-ABCDEFGHIJKLMNOPQRSTUVWX"
    extra = {
        "id": "echo",
        "input": [
            {"role": "system", "content": secret},
            {"role": "user", "content": "echo system"},
        ],
    }
    path = write_project(
        tmp_path,
        questions=[],
        extra_questions=[extra],
        config={"redaction": {"answers": False}},
        target={"graders": ["format_grader"]},
    )
    assert main(["run", "--config", str(path)]) in (0, 2)
    captured = capsys.readouterr()
    assert (
        "redaction.answers is false" in captured.out
        and "redaction.answers is false" in captured.err
    )
    (run_dir,) = (tmp_path / "runs").iterdir()
    assert _answer_of(run_dir) == f"system={secret}"  # verbatim, as asked
    with ResultStore.in_run_dir(run_dir) as store:
        assert secret not in json.dumps(
            store.load_runs()[0].answer.messages
        )  # the input still redacted
    assert main(["grade", str(run_dir), "--config", str(path)]) in (0, 2)
    assert "redaction.answers is false" in capsys.readouterr().out

    default = write_project(tmp_path / "d", questions=[], extra_questions=[extra],
                            target={"graders": ["format_grader"]})  # fmt: skip
    assert main(["run", "--config", str(default), "--quiet"]) in (0, 2)
    assert "redaction.answers" not in capsys.readouterr().err
    (run_dir,) = (tmp_path / "d" / "runs").iterdir()
    assert _answer_of(run_dir) == f"system={REDACTED}"


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.text(), st.binary(), st.integers(), st.none(), st.lists(st.text())))
def test_redaction_never_throws(value):
    policy = RedactionPolicy(names=("pin",), patterns=(r"(a+)+b",))
    assert isinstance(policy.text(value), str)
    policy.value({"x": value, "pin": value})
    policy.spans(value if isinstance(value, str) else "")


def test_lone_surrogates_are_scanned_not_dropped():
    out = DEFAULT_POLICY.text("\ud800 password=hunter2 \udfff")
    assert "hunter2" not in out and "password=" in out


def test_pathological_input_stays_linear():
    # Structural: RE2 has no backtracking, so a pattern that is exponential for Python's `re`
    # on 30 characters scans 10 MB here. The bound is generous (a loaded CI machine); the
    # backtracking engine would not finish this in hours.
    policy = RedactionPolicy(patterns=(r"(a+)+b", r"(x|x)*y"))
    sizes = 10_000_000
    inputs = [
        "a" * sizes,
        "x" * sizes,
        "password=" * (sizes // 9),
        "-----BEGIN " * (sizes // 11),
        "Bearer " * (sizes // 7),
        ("sk-" + "A" * 15 + " ") * (sizes // 19),
    ]
    started = time.perf_counter()
    for text in inputs:
        out = policy.text(text)
        assert isinstance(out, str)
    assert time.perf_counter() - started < 60
    # a whole pathological value still redacts what it should
    assert policy.text("a" * 1000 + "b") == REDACTED


# A run of the AWS secret alphabet: exactly 40 with upper, lower and digit, unpadded, is a key.
_AWS_KEY = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
_RUN_PIECE = st.one_of(
    st.just(_AWS_KEY),
    st.integers(min_value=36, max_value=44).map(lambda n: ("Ab1/+" * 9)[:n]),
    st.text(alphabet="aZ9/+", min_size=38, max_size=42),
    st.sampled_from([" ", "=", "\n", "-", ".", "==", "(redacted)", ""]),
)


def _aws_rule(text: str) -> str:
    """The AWS rule run by run, written plainly: each maximal run of [A-Za-z0-9/+] of exactly
    40, with an upper, a lower and a digit, not followed by `=`, becomes (redacted)."""
    out, i = [], 0
    alphabet = set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789/+")
    while i < len(text):
        j = i
        while j < len(text) and text[j] in alphabet:
            j += 1
        if j == i:
            out.append(text[i])
            i += 1
            continue
        run = text[i:j]
        key = (
            len(run) == 40
            and any(c.isupper() for c in run)
            and any(c.islower() for c in run)
            and any(c.isdigit() for c in run)
            and text[j : j + 1] != "="
        )
        out.append(REDACTED if key else run)
        i = j
    return "".join(out)


@settings(max_examples=300, deadline=None)
@given(st.lists(_RUN_PIECE, max_size=6).map("".join))
def test_an_aws_secret_is_exactly_a_run_of_forty_unpadded(text):
    # The only secret such texts can hold is the AWS key (no other pattern fits them).
    assert RedactionPolicy().text(text) == _aws_rule(text)


def test_a_long_run_of_letters_scans_as_fast_as_prose():
    # A 10 MB answer, tool argument or tool result of one letter (or base64) is a single run of
    # the AWS key alphabet; the run pass over it cost 4-8x the scan of prose of that size, on
    # the event loop, at every commit of such a run. Relative to prose measured alike
    # (interleaved, best of three), so a loaded machine slows both.
    policy = RedactionPolicy()
    size = 5_000_000
    run, prose = "b" * size, "word " * (size // 5)
    best = {"run": float("inf"), "prose": float("inf")}
    for _ in range(3):
        for name, text in (("run", run), ("prose", prose)):
            started = time.perf_counter()
            assert policy.text(text) == text
            best[name] = min(best[name], time.perf_counter() - started)
    assert best["run"] < 3 * best["prose"], best


def test_base64_scans_as_fast_as_prose():
    # 5 MB of base64 (an image or a file in a tool result): the URL pattern's counted scheme,
    # in the one alternation, made RE2's DFA outgrow its memory on such text and fall back to
    # the NFA, ~80x the scan of prose. Relative to prose measured alike, best of three.
    import base64
    import random

    policy = RedactionPolicy()
    blob = base64.b64encode(random.Random(7).randbytes(3_750_000)).decode()
    prose = "word " * (len(blob) // 5)
    best = {"base64": float("inf"), "prose": float("inf")}
    for _ in range(3):
        for name, text in (("base64", blob), ("prose", prose)):
            started = time.perf_counter()
            policy.text(text)
            best[name] = min(best[name], time.perf_counter() - started)
    assert best["base64"] < 3 * best["prose"], best


@pytest.mark.parametrize(
    ("text", "kept", "gone"),
    [
        ("postgres://admin:s3cr3tpw@db", "postgres://admin:", "s3cr3tpw"),
        ("git+ssh://git:tok3nValue@github.com/a", "git+ssh://git:", "tok3nValue"),
        # a scheme longer than 31 characters (its length was bounded)
        ("x" * 40 + "://user:LongSchemePw@host", "x" * 40 + "://user:", "LongSchemePw"),
        # a key glued to a URL: the key and the URL's password both go (the URL's match took
        # the key as its scheme, or the key's took the scheme and the password stayed)
        ("sk-proj-ABCDEFGHIJKLMNOPQRSTUVpostgres://admin:s3cr3tpw@db", "://admin:", "s3cr3tpw"),
        ("sk-proj-ABCDEFGHIJKLMNOPQRSTUVpostgres://admin:s3cr3tpw@db", "@db", "ABCDEFGHIJ"),
    ],
)
def test_a_urls_password_is_redacted_whatever_comes_before_it(text, kept, gone):
    out = RedactionPolicy().text(text)
    assert kept in out and gone not in out, out


def test_validate_never_prints_a_rejected_secret(tmp_path, capsys):
    # A schema problem quotes the value it rejects; the console is an exit like the others.
    path = tmp_path / "questions.yaml"
    path.write_text(
        "questions:\n  - id: password=Hunter2Plaintext\n    input: hi\n"
        "  - id: password=Hunter2Plaintext\n    input: hi\n",
        encoding="utf-8",
    )
    assert main(["validate", str(path)]) == 4
    err = capsys.readouterr().err
    assert f"{path}:4" in err and "Hunter2Plaintext" not in err and "password=" in err


def test_the_configured_policy_decides_the_judges_tool_calls_block():
    from tracegrade import Outcome, ToolCall
    from tracegrade.judging.rendering import render_tool_calls

    call = ToolCall(
        seq=0,
        name="pay",
        qualified_id="agent:pay",
        call_id="c1",
        arguments={"card_pin": "8841", "max_tokens": 50, "ref": "ACME-123456"},
        outcome=Outcome.OK,
    )
    policy = RedactionPolicy(names=("pin",), patterns=(r"ACME-[0-9]{6}",), allow=("max_tokens",))
    block = render_tool_calls([call], policy=policy)
    assert f"card_pin={REDACTED}" in block and "max_tokens=50" in block
    assert "8841" not in block and "ACME-123456" not in block
    assert "max_tokens=(redacted)" in render_tool_calls([call])  # the default policy
