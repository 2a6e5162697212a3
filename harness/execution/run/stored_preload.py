"""What a process that joins a stored run (`reopen.prepare_stored`: a grading worker of
`grade-traces --workers N` or `receive --workers N`) needs before it prepares it, loaded once
by the fork server it is forked from (named in that pool's preload), so each child shares it
page by page instead of building it again.

Beyond the modules: the dataset's fast-path validator compiled (~30 MB of transient heap in
each child that compiled it itself: with two grading workers, both at once, that was the peak
of the command's memory) and the grader registry read from the installed entry points. The
child still loads the dataset and checks its hash against the run's: only the compiled
validator is reused."""

from __future__ import annotations

import contextlib

from ...graders.registry import load_registry
from ...inputs.sourcefile import compile_validators
from . import reopen  # noqa: F401  # what the child prepares the run with


def _warm() -> None:
    # a failure here: the child meets it again and says why (exit 3); a fork server that died
    # importing this would leave its parent only a closed socket
    with contextlib.suppress(Exception):
        compile_validators("dataset")
        load_registry()


_warm()
