#!/usr/bin/env python3
"""Shows what TensorBoard itself reads from a log directory: loads it with TensorBoard's
EventAccumulator (its event files in order, SessionLog START purges applied) and prints every
scalar tag with its steps and first/last values. Manual, not part of make check:

    sh -c '. bench/venv.sh; top=$PWD python_with "import tensorboard" tensorboard'   # once
    bench/.venv/bin/python tests/tb_read.py DIR
"""
import sys

from tensorboard.backend.event_processing.event_accumulator import EventAccumulator


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: tb_read.py DIR")
    acc = EventAccumulator(sys.argv[1], size_guidance={"scalars": 0})  # 0: keep every value
    acc.Reload()
    tags = acc.Tags()["scalars"]
    print("%s: %d scalar tags" % (sys.argv[1], len(tags)))
    for tag in sorted(tags):
        ev = acc.Scalars(tag)
        steps = [e.step for e in ev]
        dup = len(steps) - len(set(steps))
        print("  %-22s %3d values, steps %s%s; first %.6g, last %.6g" % (
            tag, len(ev), compact(steps), " (%d repeated!)" % dup if dup else "", ev[0].value, ev[-1].value))


def compact(steps):
    """[1, 2, 3, 5] -> '1-3,5'."""
    out, i = [], 0
    while i < len(steps):
        j = i
        while j + 1 < len(steps) and steps[j + 1] == steps[j] + 1:
            j += 1
        out.append(str(steps[i]) if i == j else "%d-%d" % (steps[i], steps[j]))
        i = j + 1
    return ",".join(out)


if __name__ == "__main__":
    main()
