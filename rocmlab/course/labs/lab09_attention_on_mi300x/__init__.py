"""Lab 09, attention on MI300X: its puzzles (``puzzles``), their reference kernels (``kernels``), compile and timing reports (``lab``) and the speed ladder (``ladder``, ``ladder_kernels``)."""
