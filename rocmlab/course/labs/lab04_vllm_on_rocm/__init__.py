"""Lab 04, vLLM on ROCm: the latency/throughput plot (``plots``) and its graded task, meet a serving target (``task``)."""
