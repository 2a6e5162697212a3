"""The one redaction policy: what of an agent run may leave the process, land on disk or reach
a judge in clear.

A `RedactionPolicy` replaces secrets with `(redacted)`:
- by name: a value under a key whose name contains a secret-name fragment (seed 000's eleven,
  case-insensitive substring, plus the config's `redaction.names`);
- by value: text that looks like a secret wherever it appears: OpenAI/Anthropic `sk-` keys,
  AWS `AKIA…` ids, GitHub `gh?_` and Slack `xox?-` tokens, Google `AIza…` keys, `Bearer …`
  tokens (also glued to a word), JWTs, PEM private key blocks, `password=…`/`token: …`-style
  pairs in free text and URLs (the key is kept, its value redacted), the password of a URL's
  userinfo (`postgres://admin:…@db`), a secret told in prose (`my password is …`), an AWS
  secret access key (a 40-character run of `[A-Za-z0-9/+]` mixing upper case, lower case and
  digits), plus the config's `redaction.patterns`;
- by exact value: the values of the process's secret-named environment variables (`*_KEY`,
  `*_TOKEN`, `*_SECRET`, `*PASSWORD*`, `*PASSWD*` and the config's `redaction.env`), wherever
  they appear, as CI systems mask their secrets (values under 6 characters are not masked:
  they would hide ordinary words).
`redaction.allow` lists literals never redacted: an argument name exempt from the name rule
(`max_tokens`), a value exempt from the patterns (a published test key).

Every pattern runs on RE2 (`google-re2`): matching is linear in the text whatever the pattern,
so a 10 MB string or a user pattern like `(a+)+b` cannot stall a run (Python's `re`
backtracks). Redaction never raises: a value it cannot scan is replaced whole (fail closed).

The module-level functions use the default policy (no config additions); a run builds its
policy from the config (`RedactionPolicy.from_config`) and hands it to every exit.
"""

from ._console import (
    DEFAULT_POLICY,
    RedactingFormatter,
    Scrubber,
    console_policy,
    is_secret_name,
    redact_arguments,
    redact_text,
    truncate,
    use_console_policy,
)
from ._patterns import (
    REDACTED,
    SECRET_ENV_GLOBS,
    SECRET_NAME_FRAGMENTS,
    compile_pattern,
    secret_env_values,
)
from ._policy import DeferredScan, RedactionPolicy

__all__ = [
    "DEFAULT_POLICY",
    "REDACTED",
    "SECRET_ENV_GLOBS",
    "SECRET_NAME_FRAGMENTS",
    "DeferredScan",
    "RedactingFormatter",
    "RedactionPolicy",
    "Scrubber",
    "compile_pattern",
    "console_policy",
    "is_secret_name",
    "redact_arguments",
    "redact_text",
    "secret_env_values",
    "truncate",
    "use_console_policy",
]
