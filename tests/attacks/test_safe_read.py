"""rocmlab.safe_read, the one reading of a file a learner controls: a planted symbolic link is refused, a FIFO
never hangs the reader, a file over the cap is refused before it is read, a plain file reads. Each with its
control: the same file read the plain way (``open``) does what the guard prevents."""

from __future__ import annotations

import os
import threading

import pytest

from rocmlab import safe_read
from rocmlab.safe_read import ReadRefused, read_capped, read_open_file


def test_a_plain_file_reads_and_a_missing_one_says_so(tmp_path):
    f = tmp_path / "vector_add.hip"
    f.write_bytes(b"__global__ void k() {}\n")
    assert read_capped(f, 1 << 20) == b"__global__ void k() {}\n"
    assert read_capped(f, 5, whole=False) == b"__glo"                 # its start only
    fd = os.open(f, os.O_RDONLY)
    try:
        assert read_open_file(fd, 1 << 20) == f.read_bytes()
    finally:
        os.close(fd)
    # the control: a name that is not there is refused as missing, not read as empty
    with pytest.raises(ReadRefused) as e:
        read_capped(tmp_path / "nothing.hip", 1 << 20)
    assert e.value.why == safe_read.MISSING and e.value.strerror


def test_a_symbolic_link_is_refused(tmp_path):
    secret = tmp_path / "grading-seed"
    secret.write_text("424242\n")
    link = tmp_path / "vector_add.hip"
    link.symlink_to(secret)
    with pytest.raises(ReadRefused) as e:
        read_capped(link, 1 << 20)
    assert e.value.why == safe_read.LINK
    with pytest.raises(ReadRefused) as e:                   # the look before the open says it too
        read_capped(link, 1 << 20, look_first=True)
    assert e.value.why == safe_read.LINK
    dfd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:                                                    # and below a folder's descriptor
        with pytest.raises(ReadRefused) as e:
            read_capped("vector_add.hip", 1 << 20, dir_fd=dfd)
        assert e.value.why == safe_read.LINK
    finally:
        os.close(dfd)
    # the control: a plain open follows the link to the secret; so does the guard where links are allowed
    assert link.read_text() == "424242\n"
    assert read_capped(link, 1 << 20, follow_links=True) == b"424242\n"


def _in_thread(fn):
    """Run ``fn`` in a thread; (thread, box) where box gets its result or exception."""
    box = {}

    def go():
        try:
            box["value"] = fn()
        except BaseException as exc:      # noqa: BLE001 - handed back to the test
            box["error"] = exc

    t = threading.Thread(target=go, daemon=True)
    t.start()
    return t, box


@pytest.mark.parametrize("look_first", [False, True])
def test_a_fifo_does_not_hang_the_reader(tmp_path, look_first):
    fifo = tmp_path / "output.bin"
    os.mkfifo(fifo)
    t, box = _in_thread(lambda: read_capped(fifo, 1 << 20, look_first=look_first))
    t.join(10)
    assert not t.is_alive(), "read_capped blocked on a FIFO"
    assert isinstance(box.get("error"), ReadRefused) and box["error"].why == safe_read.NOT_REGULAR
    assert safe_read.kind(box["error"].mode) == "named pipe (FIFO)"
    # the control: a plain open of the same FIFO blocks (until a writer comes: this test is the writer, late)
    t, box = _in_thread(lambda: open(fifo, "rb").read())
    t.join(0.5)
    assert t.is_alive(), "a plain open of a FIFO without a writer should block"
    fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)       # the reader is there now: release it
    os.close(fd)
    t.join(10)
    assert not t.is_alive() and box.get("value") == b""


def test_a_device_and_a_folder_are_refused(tmp_path):
    for path, kind in (("/dev/zero", "character device"), (tmp_path, "folder")):
        with pytest.raises(ReadRefused) as e:
            read_capped(path, 1 << 20)
        assert e.value.why == safe_read.NOT_REGULAR and safe_read.kind(e.value.mode) == kind
    # the control: /dev/zero read the plain way gives as many bytes as asked, for ever
    with open("/dev/zero", "rb") as f:
        assert f.read(1 << 16) == bytes(1 << 16)


def test_a_file_over_the_cap_is_refused_before_it_is_read(tmp_path):
    big = tmp_path / "big.hip"
    big.write_bytes(b"x" * 1001)
    with pytest.raises(ReadRefused) as e:
        read_capped(big, 1000)
    assert e.value.why == safe_read.TOO_BIG and e.value.size == 1001 and e.value.limit == 1000
    assert "1001 bytes, over the 1000 byte limit" in str(e.value)
    # the control: at the cap exactly it reads, and the plain way reads any size
    assert read_capped(big, 1001) == b"x" * 1001
    assert len(big.read_bytes()) == 1001


def test_a_file_that_grows_past_the_cap_while_read_is_seen():
    """/proc/self/status says it is 0 bytes and holds more: the stand-in for a file that grows while it is read."""
    status = "/proc/self/status"
    if not os.path.exists(status) or os.stat(status).st_size != 0:
        pytest.skip("needs Linux's /proc/self/status (size 0, content > 100 bytes)")
    with pytest.raises(ReadRefused) as e:
        read_capped(status, 100)
    assert e.value.why == safe_read.GREW
    assert len(read_capped(status, 100, grown="cut")) == 100
    assert len(read_capped(status, 100, grown="keep")) == 101
    # the control: with a cap above its real size it reads whole
    assert read_capped(status, 1 << 20).startswith(b"Name:")


def test_a_callers_check_runs_on_the_open_file(tmp_path):
    f = tmp_path / "grading-seed"
    f.write_text("7\n")
    os.chmod(f, 0o644)

    def only_owner(st):
        if st.st_mode & 0o077:
            raise PermissionError("readable by others")

    with pytest.raises(PermissionError, match="readable by others"):
        read_capped(f, 64, check=only_owner)
    os.chmod(f, 0o600)                                      # the control: the same file, 0600
    assert read_capped(f, 64, check=only_owner) == b"7\n"
