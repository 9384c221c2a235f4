"""HIP toolchains, builds, runs and kernel inspection (see :mod:`rocmlab.hip.toolchain`)."""
