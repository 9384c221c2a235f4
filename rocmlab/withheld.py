"""What a workshop learner's server says when a reference answer is held by the instructor.

A leaf, below both the grader (which raises :class:`SolutionWithheld` when an exercise's locked solution is read)
and :mod:`rocmlab.workshop.references` (which withholds and locks the references), so neither imports the other.
"""

from __future__ import annotations

MESSAGE = ("references are held by the instructor on this hub: this workshop server does not load {what} "
           "(ROCMLAB_REFERENCES=off), so a cell that needs a reference answer skips it. Write your own answer; "
           "Hand in sends it to the instructor's grader")


class SolutionWithheld(PermissionError):
    """A locked reference file was read (an exercise's solution in a workshop learner's server). A
    PermissionError, as the lock makes it, so callers that treat a missing solution as the machine's limit go
    on; in a notebook it shows as the message alone."""

    def __init__(self, what: str):
        super().__init__(MESSAGE.format(what=what))

    def _render_traceback_(self) -> list[str]:
        return [f"{type(self).__name__}: {self}"]
