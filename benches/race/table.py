#!/usr/bin/env python3
"""The race's markdown table (scripts/race): the figures of every round in
results.tsv (round, broker, partitions, payload, metric, value), the median
over rounds with the rounds' range, and Queen's ratio to each Kafka beside."""
import argparse
import statistics
from collections import defaultdict

ap = argparse.ArgumentParser()
ap.add_argument("results")
ap.add_argument("--command", default="scripts/race")
ap.add_argument("--started", default="")
ap.add_argument("--messages", default="")
ap.add_argument("--rate", default="")
ap.add_argument("--paced-seconds", default="")
ap.add_argument("--kafka", default="")
ap.add_argument("--librdkafka", default="")
ap.add_argument("--queen", default="")
args = ap.parse_args()

vals = defaultdict(list)  # (broker, partitions, payload, metric) -> [value per round]
disk = []
rounds = set()
for line in open(args.results):
    f = line.rstrip("\n").split("\t")
    if len(f) != 6 or not f[5]:
        continue
    r, broker, parts, payload, metric, value = f
    rounds.add(r)
    try:
        v = float(value)
    except ValueError:
        continue
    if metric == "disk_mbps":
        disk.append(v)
    else:
        vals[(broker, parts, payload, metric)].append(v)

BROKERS = ["queen", "kafka-flush", "kafka-default"]
PAY = {"text": "compressible", "random": "random", "java": "random A-Z (Java tool)"}


def fmt(v, metric):
    if metric.startswith("paced_p"):
        return f"{v:.2f}"
    if metric in ("mbps", "disk_pct"):
        return f"{v:.0f}"
    return f"{v:,.0f}"


def cell(key):
    xs = vals.get(key)
    if not xs:
        return "–", None
    m = statistics.median(xs)
    text = fmt(m, key[3])
    if len(xs) > 1:
        text += f" ({fmt(min(xs), key[3])}–{fmt(max(xs), key[3])})"
    return text, m


def ratio(q, k):
    if q is None or k is None or k == 0:
        return "–"
    return f"{q / k:.2f}"


# MB/s and share of the disk's bandwidth for the produce runs on random bytes
mdisk = statistics.median(disk) if disk else None
for (b, p, pay, metric), xs in list(vals.items()):
    if metric == "produce" and pay == "random":
        vals[(b, p, pay, "mbps")] = [x * 1024 / 1e6 for x in xs]
        if mdisk:
            vals[(b, p, pay, "disk_pct")] = [x * 1024 / 1e6 / mdisk * 100 for x in xs]

ROWS = [
    ("produce", "produce, msg/s", ["text", "random"]),
    ("mbps", "produce, MB/s of values", ["random"]),
    ("disk_pct", "produce, % of disk bandwidth", ["random"]),
    ("consume", "consume all back, msg/s", ["text", "random"]),
    ("paced_rate", f"paced {args.rate} msg/s: achieved msg/s", ["text", "random"]),
    ("paced_p50", "paced: p50 latency, ms", ["text", "random"]),
    ("paced_p99", "paced: p99 latency, ms", ["text", "random"]),
    ("paced_p999", "paced: p99.9 latency, ms", ["text", "random"]),
    ("java_produce", "Java ProducerPerformance, msg/s", ["java"]),
    ("java_consume", "Java ConsumerPerformance (fetch), msg/s", ["java"]),
]
parts = sorted({k[1] for k in vals}, key=int)

n = len(rounds)
print(f"Run {args.started}: `{args.command}`\n")
print(f"Apache Kafka {args.kafka}, one KRaft broker (broker+controller); Queen {args.queen} release build, defaults; "
      f"both on 127.0.0.1 on the same disk. Client: rdkafka_performance (librdkafka {args.librdkafka} from Debian's source), "
      f"1 KiB messages, acks=all, linger.ms=5, {args.messages} messages per produce run, "
      f"paced runs {args.paced_seconds} s at {args.rate} msg/s (latency: produce call to delivery report). "
      f"{n} round{'s' if n != 1 else ''}, brokers interleaved in each (Queen, Kafka flush=1, Kafka defaults); "
      f"each figure is the median of the rounds, their range in brackets. Ratios are Queen / Kafka "
      f"(above 1 is Queen ahead for msg/s, behind for latency).\n")
if disk:
    print("fdatasync'd sequential write (1 MiB per fdatasync, 256 MiB, the brokers' disk), each round: "
          + ", ".join(f"{d:.0f}" for d in disk) + " MB/s\n")
print("| measure | partitions | payload | Queen | Kafka flush=1 | Queen / flush=1 | Kafka defaults | Queen / defaults |")
print("|---|---|---|---|---|---|---|---|")
for metric, label, pays in ROWS:
    for p in parts:
        for pay in pays:
            cells = [cell((b, p, pay, metric)) for b in BROKERS]
            if all(c[1] is None for c in cells):
                continue
            (qt, qv), (ft, fv), (dt, dv) = cells
            print(f"| {label} | {p} | {PAY[pay]} | {qt} | {ft} | {ratio(qv, fv)} | {dt} | {ratio(qv, dv)} |")
