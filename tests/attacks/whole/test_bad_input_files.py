"""Bad input to the commands a container user meets first (issue 39): a clear message naming the problem and the fix,
exit status 2, never a traceback; special files are refused before they are opened and sizes are checked with fstat
before reading. Each case has its control."""

from __future__ import annotations

import os
import time

import pytest

from rocmlab import cli


def rocmlab(capsys, *argv):
    """Run the CLI in this process: (exit status, stdout, stderr, seconds). argparse's exits count too."""
    t0 = time.monotonic()
    try:
        rc = cli.main([str(a) for a in argv])
    except SystemExit as exc:
        rc = exc.code
    out, err = capsys.readouterr()
    assert "Traceback" not in err, err
    return rc, out, err, time.monotonic() - t0

def test_grade_exchange_name_too_long(capsys, tmp_path):
    rc, out, err, _ = rocmlab(capsys, "grade", "--exercise", "vector-add", "--exchange", "x" * 5000)
    assert rc == 2 and "File name too long" in err and "give the exchange folder" in err and len(err) < 400
    rc, out, err, _ = rocmlab(capsys, "grade", "--exercise", "vector-add", "--exchange", tmp_path)   # control
    assert rc != 0 and "not an exchange" in err and "File name too long" not in err


def test_hip_build_with_rocmlab_home_a_file(capsys, tmp_path, monkeypatch):
    src = tmp_path / "a.hip"
    src.write_text("#include <hip/hip_runtime.h>\nint main() { return 0; }\n")
    home = tmp_path / "home-file"
    home.write_text("not a folder")
    monkeypatch.setenv("ROCMLAB_HOME", str(home))
    rc, out, err, _ = rocmlab(capsys, "hip", "inspect", src)
    assert rc == 2 and f"ROCMLAB_HOME={home} is not a folder" in err and "set ROCMLAB_HOME to a folder" in err
    from rocmlab.paths import cache_dir
    monkeypatch.setenv("ROCMLAB_HOME", str(tmp_path / "home"))                   # control: a folder
    assert cache_dir() == tmp_path / "home"


def test_hipify_a_fifo_is_refused_at_once(capsys, tmp_path):
    fifo = tmp_path / "k.cu"
    os.mkfifo(fifo)                     # no writer: opening it for reading would block forever
    rc, out, err, seconds = rocmlab(capsys, "hip", "hipify", fifo)
    assert rc == 2 and "named pipe (FIFO)" in err and seconds < 5
    rc, out, err, _ = rocmlab(capsys, "hip", "translate", fifo)
    assert rc == 2 and "not a file" in err
    cu = tmp_path / "k2.cu"                                                    # control: a CUDA file
    cu.write_text("__global__ void k(float* p) { p[threadIdx.x] = 1; }\nint main() { cudaDeviceSynchronize(); }\n")
    rc, out, err, _ = rocmlab(capsys, "hip", "hipify", cu)
    assert rc in (0, 1) and "hipDeviceSynchronize" in out


def test_hip_build_refuses_a_huge_file_by_its_size(capsys, tmp_path):
    from rocmlab import settings
    big = tmp_path / "big.hip"
    with open(big, "wb") as f:                        # sparse: 3 GB that take no disk and would take seconds to read
        f.truncate(3 << 30)
    rc, out, err, seconds = rocmlab(capsys, "hip", "build", big)
    assert rc == 2 and "3072 MB" in err and f"at most {settings.SOURCE_MAX_BYTES >> 20} MB" in err and seconds < 5
    from rocmlab.commands.hip import SourceError, read_source
    small = tmp_path / "small.hip"
    small.write_text("int main() { return 0; }\n")
    assert read_source(small, max_bytes=100) == "int main() { return 0; }\n"      # control
    with pytest.raises(SourceError, match="at most"):
        read_source(small, max_bytes=10)


def test_hip_flags_value_that_starts_with_a_dash(capsys):
    from rocmlab.commands.hip import join_flag_values
    parser = cli.build_parser()
    args = parser.parse_args(["hip", "build", "x.hip", "-f", "-O2 -DN=4", "--no-run"])      # the README's form
    assert args.flags == "-O2 -DN=4" and args.no_run
    args = parser.parse_args(["hip", "inspect", "x.hip", "--flags", "-O1"])
    assert args.flags == "-O1"
    args = parser.parse_args(["hip", "build", "x.hip", "--", "-f", "-O2"])          # the program's own arguments
    assert args.args == ["-f", "-O2"] and args.flags == ""
    assert join_flag_values(["-f", "-O2", "--", "-f", "-x"]) == ["--flags=-O2", "--", "-f", "-x"]
