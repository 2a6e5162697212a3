"""CI providers: what a run says on GitHub (step summary, annotations at the dataset line, a
sticky pull-request comment) and on GitLab (a Code Quality report, a merge-request note).

Above the reports: every figure and reason comes from the same renderers as the console,
Markdown and JUnit reports; this room only places them where a provider shows them, and sends
them. Sending never changes the run's exit code: an API error is one warning.
"""
