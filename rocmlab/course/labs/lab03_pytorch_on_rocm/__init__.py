"""Lab 03, PyTorch on ROCm: its graded task, fix the slow step (``task``)."""
