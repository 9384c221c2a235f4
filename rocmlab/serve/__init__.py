"""Serving LLMs: launch vLLM/SGLang, wait for health, benchmark, plan memory."""
