"""The benchmark client for OpenAI-compatible servers (vLLM, SGLang), in one import.

It measures what ``vllm bench serve`` measures, with vLLM's definitions and key names. The
work lives in three modules; this one gathers their public names (``from rocmlab.serve import
bench`` then ``bench.run``, ``bench.sweep`` ...):

- :mod:`rocmlab.serve.client`: HTTP and server-sent events, one timed streamed request, its
  four limits (:class:`Timeouts`), the server checks and the tokenizer endpoints;
- :mod:`rocmlab.serve.metrics`: TTFT, TPOT, ITL, E2EL, throughput and goodput as vLLM's
  ``calculate_metrics``; result dicts and files;
- :mod:`rocmlab.serve.load`: prompts, Poisson arrivals, one benchmark :func:`run`, and
  :func:`sweep` over concurrencies and request rates.

A request that fails (server died, timeout, malformed stream, a stream cut before its
``[DONE]``) is marked failed with a clear ``error`` and the bytes received; the others are kept
(vLLM's client would count a cut stream as a success). A sweep keeps its finished points.
"""

from __future__ import annotations

from rocmlab.serve.client import (BadServerAnswer, Chunk, MalformedChunk, RequestOutput, SampleRequest, ServerUnreachable,
                                  SSEBuffer, StreamParser, Timeouts, check_server, detokenize, parse_chunk,
                                  parse_message, request_one, tokenize)
from rocmlab.serve.load import (NOT_SENT, InitialRequestFailed, run_requests, run_coroutine, arrival_delays, load_prompts,
                                prompt_requests, prompts_path, random_requests, run, sweep)
from rocmlab.serve.metrics import (MS, SCALAR_KEYS, calculate_metrics, load_results, make_result,
                                   outputs_from_result, save_result, to_frame)

__all__ = ["BadServerAnswer", "Chunk", "InitialRequestFailed", "MS", "MalformedChunk", "NOT_SENT", "RequestOutput",
           "SCALAR_KEYS", "SSEBuffer", "SampleRequest", "ServerUnreachable", "StreamParser", "Timeouts",
           "arrival_delays", "calculate_metrics", "check_server", "detokenize", "load_prompts", "load_results",
           "make_result", "outputs_from_result", "parse_chunk", "parse_message", "prompt_requests", "prompts_path",
           "random_requests", "request_one", "run", "save_result", "sweep", "to_frame", "tokenize",
           "run_requests", "run_coroutine"]
