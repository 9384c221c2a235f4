"""Reading the learner's files in ``my-work/`` for a grade: checked on the open file before anything is read."""

from __future__ import annotations

import errno

from rocmlab.safe_read import NOT_REGULAR, TOO_BIG, ReadRefused, read_capped

#: The largest file in the learner's folder that is read for a grade (a source file is a few kB).
MAX_WORK_BYTES = 1 << 20


def read_my_work(path) -> str:
    """The text of a learner's file in ``my-work/``, checked on the open file before anything is read
    (:func:`rocmlab.safe_read.read_capped`, links followed): a regular file (a FIFO, a device or a folder is refused
    without blocking) of at most :data:`MAX_WORK_BYTES`. Raises
    OSError whose ``strerror`` says what is wrong and what to do."""
    try:
        data = read_capped(path, MAX_WORK_BYTES, follow_links=True)   # links followed: the learner reads their own
    except ReadRefused as exc:
        if exc.error is not None:
            raise OSError(exc.errno, f"cannot open it ({exc.strerror})") from None
        if exc.why == NOT_REGULAR:
            raise OSError(errno.EINVAL, "it is not a regular file (a folder, a FIFO or a device): save your source "
                                        "as a normal file") from None
        if exc.why == TOO_BIG:
            raise OSError(errno.EFBIG, f"it is {exc.size} bytes, over the {MAX_WORK_BYTES} byte limit of a graded "
                                       "file: keep only your source in it") from None
        raise OSError(errno.EFBIG, "it grew over the size limit while it was read") from None
    return data.decode("utf-8", errors="replace")
