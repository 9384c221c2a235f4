"""Lab 01, the HIP programming model: its inline exercises, ROCm 7 facts and the wave-sum exercise (``lab``)."""
