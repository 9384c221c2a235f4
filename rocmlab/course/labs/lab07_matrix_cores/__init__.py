"""Lab 07, matrix cores: its graded task, waves per SIMD from a kernel's resources (``task``)."""
