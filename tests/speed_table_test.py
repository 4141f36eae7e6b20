"""tests/bench/speed_table.py: Google Benchmark's JSON into the README's speed table (cells the
median of their repetitions, aggregates ignored, the median over traces, the step runs), and
its refusal of a missing benchmark program."""
import os
import subprocess
import sys

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(root, "tests", "bench"))
import speed_table  # noqa: E402


def bench(name, rate, aggregate=False):
    b = {"name": name, "accesses_per_s": rate * 1e6}
    if aggregate:
        b["run_type"] = "aggregate"
    return b


def test_table():
    runs = []
    for trace, scale in (("a", 1), ("b", 2), ("c", 4)):
        for policy, cap in speed_table.COLUMNS:
            for rep in (10, 30, 20):  # median 20
                runs.append(bench(f"Real/{trace}/{policy}/{cap}", rep * scale))
        runs.append(bench(f"Decode/{trace}", 100 * scale))
    runs.append(bench("Real/a/ondemand/50_median", 999, aggregate=True))
    runs += [bench("Steps/dnn/ondemand/50/10", 7), bench("Steps/dnn/ondemand/50/1", 5)]
    c = speed_table.cells({"benchmarks": runs})
    assert c[("real", "a", "ondemand", "50")] == 20
    assert c[("real", "c", "oracle", "50")] == 80
    out = speed_table.table(c).splitlines()
    assert out[0].startswith("| trace | ondemand 100% | ondemand 50% |")
    assert out[2] == "| a | 20.0 | 20.0 | 20.0 | 20.0 | 20.0 | 100.0 |"
    assert out[5] == ("| **median** | **40.0** | **40.0** | **40.0** | **40.0** | **40.0** "
                      "| **200.0** |")
    assert out[6] == "| target (issue 23) |  | 30 | 15 | 15 | 15 | 100 |"
    assert out[-1] == ("Synthetic DNN trace (1 GiB, 24 layers), ondemand at 50%: "
                       "1 steps 5.0 M accesses/s, 10 steps 7.0 M accesses/s.")


def test_missing_program():
    p = subprocess.run([sys.executable, os.path.join(root, "tests", "bench", "speed_table.py"),
                        "--bench", "/nonexistent/faultline_bench"], capture_output=True, text=True)
    assert p.returncode != 0
    assert "/nonexistent/faultline_bench is missing" in p.stderr


if __name__ == "__main__":
    test_table()
    test_missing_program()
    print("speed table: ok")
