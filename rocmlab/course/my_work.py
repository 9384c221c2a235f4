"""Reading the learner's files in ``my-work/`` for a grade: checked on the open file before anything is read."""

from __future__ import annotations

import errno
import os
import stat

#: The largest file in the learner's folder that is read for a grade (a source file is a few kB).
MAX_WORK_BYTES = 1 << 20


def read_my_work(path) -> str:
    """The text of a learner's file in ``my-work/``, checked on the open file before anything is read: a regular
    file (a FIFO, a device or a folder is refused without blocking) of at most :data:`MAX_WORK_BYTES`. Raises
    OSError whose ``strerror`` says what is wrong and what to do."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise OSError(exc.errno, f"cannot open it ({exc.strerror})") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(errno.EINVAL, "it is not a regular file (a folder, a FIFO or a device): save your source "
                                        "as a normal file")
        if st.st_size > MAX_WORK_BYTES:
            raise OSError(errno.EFBIG, f"it is {st.st_size} bytes, over the {MAX_WORK_BYTES} byte limit of a graded "
                                       "file: keep only your source in it")
        data = os.read(fd, MAX_WORK_BYTES + 1)
    finally:
        os.close(fd)
    if len(data) > MAX_WORK_BYTES:
        raise OSError(errno.EFBIG, "it grew over the size limit while it was read")
    return data.decode("utf-8", errors="replace")
