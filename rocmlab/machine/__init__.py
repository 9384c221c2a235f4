"""What this machine is: the backend and its devices, the software stack, hardware facts (the doctor, which
checks this and every other room, is :mod:`rocmlab.doctor`, above them).

- :mod:`rocmlab.machine.detect`    the backend (rocm, cuda or cpu), detected once, with device facts
- :mod:`rocmlab.machine.hardware`  published specs of the GPUs the course compares (datasets/hardware.csv)
- :mod:`rocmlab.machine.topology`  the MI300X package model (XCDs, CUs, caches) the labs reason with
- :mod:`rocmlab.machine.stack`     the ROCm libraries found here, and the version table
"""
