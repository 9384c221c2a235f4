"""Lab 11, counters and faults: the exercises' grading and fault questions (``lab``) and the counter diagnosis (``counters``)."""
