"""The grader's exceptions: each one becomes a one-line message in exactly one place (cli.py)."""

from __future__ import annotations


class GraderError(Exception):
    """Something the user can fix; the message names the file or value and what to do."""


class SubmissionError(GraderError):
    """The submission is at fault (missing, unreadable, unsafe); shown to the student."""


class ConfigError(GraderError):
    """The course set-up is at fault (manifest, hidden tests, paths); shown to staff."""


class UsageError(GraderError):
    """A wrong command-line flag or value."""
