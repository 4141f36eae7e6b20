"""experiments/live/fidelity.py kernels: a `faultline run --per-kernel` result set beside the
simulator's per_kernel rows, row by row, and summed by kind of kernel (lab/live/kernels.py)."""
import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "experiments"))
from lab.live import kernels  # noqa: E402


def sim_row(name, compute, stall, faults):
    return {"name": name, "compute_ns": compute, "stall_ns": stall, "faults": faults}


def run_with(rows):
    return {"kernels": rows}


def test_kinds_from_names():
    assert kernels.kind_of("[memcpy HtoD]") == "copy"
    assert kernels.kind_of("void cutlass::Kernel2<cutlass_80_tensorop_s1688gemm>(...)") == "gemm"
    assert kernels.kind_of("void pytorch_flash::flash_fwd_kernel<...>(...)") == "attention"
    assert kernels.kind_of("void cudnn::bn_fw_tr_1C11_kernel_NCHW<...>") == "convolution"
    assert kernels.kind_of("void at::native::vectorized_elementwise_kernel<4, ...>") == "elementwise"
    assert kernels.kind_of("void at::native::embedding_bag_kernel<...>") == "gather"
    assert kernels.kind_of("mystery") == "other"
    assert kernels.short("void f<int, float>(int*, float)") == "void f<>"


def test_rows_line_up_by_index_and_sum_by_kind():
    sim = [sim_row("gemm_a", 100, 50, 4), sim_row("[memcpy HtoD]", 10, 0, 0),
           sim_row("gemm_a", 100, 0, 0), sim_row("elementwise_b", 20, 30, 2)]
    program = [{"index": 0, "gpu_ns": 180, "gpu_faults": 3},
               {"index": 1, "gpu_ns": 10, "gpu_faults": 0},
               {"index": 2, "gpu_ns": None},  # CUPTI had no record of it: left out
               {"index": 3, "gpu_ns": 10, "gpu_faults": 1}]  # faster than recorded: no stall
    pairs = kernels.compare(run_with(program), sim)
    assert [p["name"] for p in pairs] == ["gemm_a", "[memcpy HtoD]", "elementwise_b"]
    assert pairs[0]["program_stall_ns"] == 80 and pairs[0]["sim_stall_ns"] == 50
    assert pairs[2]["program_stall_ns"] == 0
    by_kind = {g["kind"]: g for g in kernels.summed(pairs, "kind")}
    assert by_kind["gemm"]["operations"] == 1
    assert by_kind["gemm"]["stall_ratio"] == round(50 / 80, 3)
    assert by_kind["elementwise"]["stall_ratio"] is None  # no stall in the program
    assert by_kind["copy"]["program_faults"] == 0


def test_runs_that_do_not_line_up_are_left_out():
    assert kernels.compare(run_with([{"index": 0, "gpu_ns": 5}]), []) is None


def test_a_shipped_trace_lines_up_with_a_run_of_its_operations():
    """The simulator's per_kernel rows of a shipped trace under the run's policy and budget: one
    per operation, so that a run of the same program lines up row for row."""
    faultline = os.environ.get("FAULTLINE_BIN", os.path.join(REPO, "build", "faultline"))
    trace = os.path.join(REPO, "traces", "real", "resnet50.fltrace")
    run = {"config": {"policy": {"name": "ondemand"}, "budget": {"fraction_of_footprint": 0.75}},
           "results": {"policy_decision_ns": 2000, "kernels": 10}}
    rows = kernels.simulate_rows(trace, run, os.path.join(REPO, "configs", "gpus", "h100.json"),
                                 faultline)
    assert rows and all("stall_ns" in r and "faults" in r for r in rows)
    run["kernels"] = [{"index": i, "gpu_ns": r["compute_ns"] + r["stall_ns"] // 2, "gpu_faults": 1}
                      for i, r in enumerate(rows)]
    pairs = kernels.compare(run, rows)
    assert len(pairs) == len(rows)
    total_sim = sum(p["sim_stall_ns"] for p in pairs)
    total_program = sum(p["program_stall_ns"] for p in pairs)
    assert total_sim > 0 and abs(total_program - total_sim / 2) <= len(pairs)


def test_the_report_is_lines_of_text_with_a_table_for_each_aligned_run():
    sim = [sim_row("gemm_a", 100, 50, 4), sim_row("elementwise_b", 20, 30, 2)]
    program = [{"index": 0, "gpu_ns": 180, "gpu_faults": 3},
               {"index": 1, "gpu_ns": 60, "gpu_faults": 1}]
    pairs = kernels.compare(run_with(program), sim)
    total = {k: sum(p[k] for p in pairs) for k in
             ("compute_ns", "program_stall_ns", "sim_stall_ns", "program_faults", "sim_faults")}
    doc = {"campaign": "c", "runs": [
        {"run": "p-ondemand-0.75", "aligned": True, "timed_operations": len(pairs),
         "total": total, "by_kind": kernels.summed(pairs, "kind"),
         "by_kernel": kernels.summed(pairs, "name")},
        {"run": "q-ondemand-0.75", "aligned": False, "program_operations": 3,
         "sim_operations": 2}]}
    lines = kernels.markdown(doc, "fidelity.py kernels c")
    assert all(isinstance(line, str) for line in lines)
    assert "| gemm | 1 | 0.0 | 0.0 | 0.0 | 0.625 | 3 | 4 |" in lines
    assert any(line.startswith("Not aligned: the program ran 3 operations") for line in lines)


def test_runs_without_counters_leave_the_programs_faults_null():
    """`faultline run --per-kernel` without --um-counters has times only: the report says the
    program's faults were not counted rather than summing zeros."""
    sim = [sim_row("gemm_a", 100, 50, 4), sim_row("elementwise_b", 20, 30, 2)]
    program = [{"index": 0, "gpu_ns": 180}, {"index": 1, "gpu_ns": 60}]
    pairs = kernels.compare(run_with(program), sim)
    assert [p["program_faults"] for p in pairs] == [None, None]
    by_kind = {g["kind"]: g for g in kernels.summed(pairs, "kind")}
    assert by_kind["gemm"]["program_faults"] is None and by_kind["gemm"]["sim_faults"] == 4
    total = {k: sum(p[k] for p in pairs) for k in
             ("compute_ns", "program_stall_ns", "sim_stall_ns", "sim_faults")}
    total["program_faults"] = None
    doc = {"campaign": "c", "runs": [
        {"run": "p-ondemand-0.75", "aligned": True, "timed_operations": len(pairs),
         "total": total, "by_kind": kernels.summed(pairs, "kind"),
         "by_kernel": kernels.summed(pairs, "name")}]}
    lines = kernels.markdown(doc, "fidelity.py kernels c")
    assert any("not counted in the program (no --um-counters)" in line for line in lines)
    assert "| gemm | 1 | 0.0 | 0.0 | 0.0 | 0.625 | None | 4 |" in lines
