"""CUDA to HIP on the source text: the translation and the trap scanner. Nothing here compiles or runs code.

- :mod:`rocmlab.cuda2hip.translate`: THE CUDA->HIP translation (torch.utils.hipify or hipify-perl,
  then rocmlab's mechanical fixes); a single file is a one-file project. ``shims/`` holds the replacement
  headers a port may need (``rocmlab_port/*.h``), copied into the port's output.
- :mod:`rocmlab.cuda2hip.scan`: THE trap scanner (what a HIP port still gets wrong on an AMD GPU,
  judged on the code the AMD compiler really compiles), in rooms: tokenizer, preprocessor, rules.
- :mod:`rocmlab.cuda2hip.hipify`: the two together on one file or folder, the notebook-facing view
  (``rocmlab hip hipify``, the exercises' starter ports, the speedup check's baseline).

All sit below the rooms that use them: :mod:`rocmlab.hip` (the compiler driver) and :mod:`rocmlab.port`
(``rocmlab port``: whole projects, built and run) import them; they import neither.
"""
