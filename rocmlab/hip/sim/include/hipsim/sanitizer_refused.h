// Read first by a simulator build given -fsanitize=... (rocmlab/hip/simulate.py: command): the build stops here
// with the reason, instead of a program that cannot start (its libclang_rt runtime is not in the run's root) or
// that AddressSanitizer aborts (it reserves terabytes of shadow address space; the sandbox caps a run's).
#error -fsanitize=... (AddressSanitizer and the other compiler sanitizers) does not run on the CPU simulator: their runtime reserves terabytes of address space, which the sandbox's memory cap refuses. The simulator checks every device access itself (memcheck, initcheck, racecheck: build without -fsanitize here), and ROCm's AddressSanitizer runs on an AMD GPU (gfx942:xnack+)
