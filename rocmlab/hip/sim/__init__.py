"""The CPU simulator's runtime (``include/``, ``runtime.cpp``) and its wave64 traps (:mod:`.traps`).
The driver is :mod:`rocmlab.hip.simulate`."""
