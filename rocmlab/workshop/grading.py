"""The instructor's grading seed: :func:`read_seed_file` reads it from the file the hub writes
(``WORK/instructor/grading-seed``, mode 600), so it stays off every command line. ``rocmlab grade --exchange DIR
--seed-file FILE`` (:mod:`rocmlab.commands.grade`) uses it; the grading itself is
:func:`rocmlab.workshop.exchange.grade_exchange`."""

from __future__ import annotations

from rocmlab.safe_read import ReadRefused, read_capped


class SeedFileError(ValueError):
    """--seed-file cannot be used: the message says why and the fix."""


def read_seed_file(path, seed_arg: int | None = None) -> int:
    """The grading seed from ``path``: a file only its owner may read (0600 or stricter), holding one integer.
    A seed in a file stays off every command line (``/proc/PID/cmdline`` is world-readable unless /proc is
    mounted with hidepid). The file is read as :mod:`rocmlab.safe_read` reads: never through a link, never
    blocking on a FIFO, its first 64 bytes only."""
    if seed_arg is not None:
        raise SeedFileError("give --seed-file or --seed, not both (--seed-file keeps the seed off the command line)")

    def only_owner_reads(st) -> None:
        if st.st_mode & 0o077:
            raise SeedFileError(f"--seed-file {path} is readable by others (mode {st.st_mode & 0o777:o}): "
                                f"chmod 600 {path}, and pick a new seed if learners could read it")

    try:
        data = read_capped(path, 64, check=only_owner_reads, whole=False)
    except ReadRefused as exc:
        if exc.error is None:                  # open, but not a regular file
            raise SeedFileError(f"--seed-file {path} is not a regular file: give the seed file") from None
        raise SeedFileError(f"--seed-file {path}: {exc.strerror}: give the instructor's seed file (the hub writes "
                            "WORK/instructor/grading-seed, mode 600)") from None
    text = data.decode("ascii", "replace").strip()
    try:
        return int(text)
    except ValueError:
        raise SeedFileError(f"--seed-file {path} does not hold one integer: write a number into it, e.g. "
                            f"python3 -c 'import secrets; print(secrets.randbelow(2**31))' > {path}") from None
