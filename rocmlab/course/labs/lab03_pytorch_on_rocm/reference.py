"""Lab 03 task's reference answer (the fix of the slow step). Withheld from learners in a workshop
(:mod:`rocmlab.workshop.references`); the grade never needs it: it computes the expected scores with the slow step
itself, in float64."""

from rocmlab.workshop.references import guard

guard(__name__)   # a workshop learner's server (ROCMLAB_REFERENCES=off) does not load references
import torch  # noqa: E402 - after the guard


def fast_scores(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor):
    """The fix: the whole batch at once, and the total kept on the device."""
    h = torch.relu(x @ w + b)
    s = h.sum(dim=1, keepdim=True)
    return h / (s + 1.0), h.sum()
