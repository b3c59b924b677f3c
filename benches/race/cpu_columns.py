#!/usr/bin/env python3
# scripts/race's CPU columns, beside each broker's rate and each ratio of table.py's
# table: table.py ignores the *_cpu figures of results.tsv, and this script joins them
# to its rows by their labels, so a change of table.py's labels or columns
# has to be made here too (it stops rather than misplace a column).
#
# Usage: table.py ... | cpu_columns.py RESULTS_TSV PACED_RATE
import statistics, sys
from collections import defaultdict

cpu = defaultdict(list)  # (broker, partitions, payload, metric) -> [s per million msg per round]
for line in open(sys.argv[1]):
    f = line.rstrip("\n").split("\t")
    if len(f) == 6 and f[4].endswith("_cpu") and f[5]:
        cpu[(f[1], f[2], f[3], f[4])].append(float(f[5]))
RATES = {"produce, msg/s": "produce_cpu", "consume all back, msg/s": "consume_cpu",
         f"paced {sys.argv[2]} msg/s: achieved msg/s": "paced_cpu"}
PAY = {"compressible": "text", "random": "random"}
HEAD = "| measure | partitions | payload | Queen | Kafka flush=1 | Queen / flush=1 | Kafka defaults | Queen / defaults |"


def cell(key):
    xs = cpu.get(key)
    if not xs:
        return "–", None
    m = statistics.median(xs)
    return f"{m:.2f}" + (f" ({min(xs):.2f}–{max(xs):.2f})" if len(xs) > 1 else ""), m


def ratio(q, k):
    return "–" if q is None or k is None or k == 0 else f"{q / k:.2f}"


table = False
for line in sys.stdin:
    line = line.rstrip("\n")
    if line.startswith("| measure |"):
        if line != HEAD:
            sys.exit(f"scripts/race: table.py's columns are not the ones the CPU columns expect: {line}")
        table = True
        print("CPU s/M msg: the broker process's user+system CPU seconds (/proc/PID/stat, all its threads) "
              "from just before to just after the case, per million messages of the case (none for the Java client); "
              "its ratios are Queen / Kafka too (below 1 is Queen spending less CPU per message).\n")
        print("| measure | partitions | payload | Queen | Queen CPU s/M msg | Kafka flush=1 | flush=1 CPU s/M msg "
              "| Queen / flush=1 | CPU Queen / flush=1 | Kafka defaults | defaults CPU s/M msg "
              "| Queen / defaults | CPU Queen / defaults |")
        print("|---" * 13 + "|")
    elif table and line.startswith("|---"):
        continue
    elif table and line.startswith("| "):
        label, p, pay, q, f, qf, d, qd = (c.strip() for c in line.strip().strip("|").split("|"))
        metric = RATES.get(label)
        if metric:
            (qc, qv), (fc, fv), (dc, dv) = (cell((b, p, PAY[pay], metric)) for b in ("queen", "kafka-flush", "kafka-default"))
            fr, dr = ratio(qv, fv), ratio(qv, dv)
        else:  # no rdkafka_performance rate in this row (MB/s, disk share, latency, the Java client)
            qc = fc = dc = fr = dr = ""
        print(f"| {label} | {p} | {pay} | {q} | {qc} | {f} | {fc} | {qf} | {fr} | {d} | {dc} | {qd} | {dr} |")
    else:
        print(line)
