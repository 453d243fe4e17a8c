"""Reads a map's results by its ID, as a new client after the one that
started it died: python3 resume.py MAP_ID N [START]."""

import sys

import levers9

map_id, n = sys.argv[1], int(sys.argv[2])
start = int(sys.argv[3]) if len(sys.argv) > 3 else 0
got = list(levers9.FunctionMap.from_id(map_id, start=start))
want = [i * i for i in range(start, n)]
print("resumed:", "in order %d from %d" % (len(got), start) if got == want else "WRONG %r" % got[:20], flush=True)
