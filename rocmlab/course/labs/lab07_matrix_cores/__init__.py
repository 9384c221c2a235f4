"""Lab 07, matrix cores: its graded task, the VGPR budget for a number of waves per SIMD (``task``, its withheld ``reference``)."""
