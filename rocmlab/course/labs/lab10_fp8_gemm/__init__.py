"""Lab 10, the FP8 GEMM: its puzzles (``puzzles``), their reference kernels (``kernels``), reports (``lab``) and the speed ladder (``ladder``, ``ladder_kernels``)."""
