"""Lab 06, Triton on AMD: the lab's kernels and reports (``lab``) and the puzzles' reference and wrong kernels (``kernels``)."""
