"""rocmlab.profile.counters: the commands, and the CSVs of rocprofv3 --pmc and ncu --csv read into DataFrames."""

import pytest

from rocmlab.profile import counters

ROCPROF_CSV = """Correlation_Id,Dispatch_Id,Agent_Id,Queue_Id,Process_Id,Thread_Id,Grid_Size,Kernel_Id,Kernel_Name,Workgroup_Size,LDS_Block_Size,Scratch_Size,VGPR_Count,Accum_VGPR_Count,SGPR_Count,Counter_Name,Counter_Value,Start_Timestamp,End_Timestamp
1,1,2,1,100,100,1048576,7,"scale_rows(float const*, float const*, float*, int, int)",256,0,0,12,0,16,TCP_TOTAL_CACHE_ACCESSES_sum,1000,10,20
1,1,2,1,100,100,1048576,7,"scale_rows(float const*, float const*, float*, int, int)",256,0,0,12,0,16,SQ_INSTS_VMEM_RD,40,10,20
1,1,2,1,100,100,1048576,7,"scale_rows(float const*, float const*, float*, int, int)",256,0,0,12,0,16,SQ_INSTS_VMEM_WR,10,10,20
2,2,2,1,100,100,1048576,7,"scale_rows(float const*, float const*, float*, int, int)",256,0,0,12,0,16,TCP_TOTAL_CACHE_ACCESSES_sum,400,30,40
2,2,2,1,100,100,1048576,7,"scale_rows(float const*, float const*, float*, int, int)",256,0,0,12,0,16,SQ_INSTS_VMEM_RD,70,30,40
2,2,2,1,100,100,1048576,7,"scale_rows(float const*, float const*, float*, int, int)",256,0,0,12,0,16,SQ_INSTS_VMEM_WR,30,30,40
"""

NCU_CSV = '''==PROF== Connected to process 1
scale_rows n=1000: done
"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"
"0","1","prog","h","scale_rows","1","7","(256, 1, 1)","(10, 1, 1)","0","9.0","Command line profiler metrics","l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum","sector","1,024"
"0","1","prog","h","scale_rows","1","7","(256, 1, 1)","(10, 1, 1)","0","9.0","Command line profiler metrics","l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum","","32"
'''


def test_pmc_command_and_its_bad_input():
    cmd = counters.pmc_command(["SQ_WAVES", "GRBM_GUI_ACTIVE"], "/tmp/o", ["./prog", "in", "out"])
    assert cmd[:4] == ["rocprofv3", "--pmc", "SQ_WAVES", "GRBM_GUI_ACTIVE"] and cmd[-4:] == ["--", "./prog", "in", "out"]
    with pytest.raises(ValueError, match="at least one counter"):
        counters.pmc_command([], "/tmp/o", ["./prog"])


def test_read_counter_csv_one_row_per_dispatch_and_the_figure(tmp_path):
    p = tmp_path / "x_counter_collection.csv"
    p.write_text(ROCPROF_CSV)
    df = counters.read_counter_csv(p)
    assert list(df["dispatch"]) == [1, 2] and df["TCP_TOTAL_CACHE_ACCESSES_sum"].tolist() == [1000.0, 400.0]
    fig = counters.derived(df, counters.diagnosis("lab11-coalesce")).tolist()
    assert fig == [20.0, 4.0]     # 1000 / 50 lines per instruction against 400 / 100
    assert counters.find_counter_csv(tmp_path) == str(p)


def test_read_counter_csv_rejects_a_kernel_trace(tmp_path):
    p = tmp_path / "k.csv"
    p.write_text("Kernel_Name,Start_Timestamp,End_Timestamp\nk,1,2\n")
    with pytest.raises(counters.CounterError, match="not a rocprofv3 counter collection"):
        counters.read_counter_csv(p)


def test_read_ncu_csv_and_not_permitted():
    df = counters.read_ncu_csv(NCU_CSV)
    assert df.loc[0, "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"] == 1024.0
    assert df.loc[0, "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"] == 32.0
    with pytest.raises(counters.CountersNotPermitted, match="ERR_NVGPUCTRPERM"):
        counters.read_ncu_csv("==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU "
                              "Performance Counters on the target device 0.")
    with pytest.raises(counters.CounterError, match="no ncu CSV table"):
        counters.read_ncu_csv("program output only\n")


def test_every_diagnosis_names_known_gfx942_counters_and_tools_say_when_missing():
    for d in counters.DIAGNOSES:
        assert set(d.mi300x) <= set(counters.GFX942), d.cause
        assert d.nvidia and d.offline
    with pytest.raises(counters.CounterError, match="rocprofv3 is not on PATH"):
        counters.collect(["./x"], ["SQ_WAVES"], which=lambda _: None)
    with pytest.raises(counters.CounterError, match="ncu"):
        counters.collect_ncu(["./x"], ["gpu__time_duration.sum"], which=lambda _: None)
    assert any("-b 4" in c for c in counters.rocprof_compute_commands("k", ["./k"]))


def _fake_tool(tmp_path, name, body):
    p = tmp_path / name
    p.write_text("#!/bin/sh\n" + body)
    p.chmod(0o755)
    return str(p)


def test_collect_runs_rocprofv3_and_reads_what_it_wrote(tmp_path):
    csv_text = ROCPROF_CSV.replace('"', '\\"')
    # a stand-in for rocprofv3: finds -d DIR, writes DIR/host/pid/counters_counter_collection.csv
    tool = _fake_tool(tmp_path, "rocprofv3", 'while [ "$1" != "-d" ]; do shift; done; d="$2"; mkdir -p "$d/h/1"; '
                                             f'printf "%s" "{csv_text}" > "$d/h/1/counters_counter_collection.csv"\n')
    df = counters.collect(["./prog"], ["TCP_TOTAL_CACHE_ACCESSES_sum"], out_dir=str(tmp_path / "o"), which=lambda _: tool)
    assert len(df) == 2 and "SQ_INSTS_VMEM_RD" in df.columns
    bad = _fake_tool(tmp_path, "rocprofv3-bad", "echo 'counter not found: SQ_NOPE' >&2; exit 1\n")
    with pytest.raises(counters.CounterError, match="SQ_NOPE"):
        counters.collect(["./prog"], ["SQ_NOPE"], out_dir=str(tmp_path / "o2"), which=lambda _: bad)


def test_collect_ncu_reads_its_table_and_says_when_counters_are_not_permitted(tmp_path):
    table = NCU_CSV.replace('"', '\\"')
    ok = _fake_tool(tmp_path, "ncu", f'printf "%s" "{table}"\n')
    df = counters.collect_ncu(["./prog"], ["l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"], which=lambda _: ok)
    assert df.loc[0, "kernel"] == "scale_rows"
    denied = _fake_tool(tmp_path, "ncu-denied", "echo '==ERROR== ERR_NVGPUCTRPERM - The user does not have "
                                                "permission to access NVIDIA GPU Performance Counters'\n")
    with pytest.raises(counters.CountersNotPermitted):
        counters.collect_ncu(["./prog"], ["gpu__time_duration.sum"], which=lambda _: denied)
