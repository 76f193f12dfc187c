# SPDX-License-Identifier: BSD-2-Clause
"""A second of real work, then a crash: `python3 pyjson.py N` encodes and
decodes a small JSON document N times and kills itself with SIGSEGV, as a
service that runs for a while and then faults (bench/scale.sh)."""
import json
import os
import signal
import sys

n = int(sys.argv[1]) if len(sys.argv) > 1 else 5000
doc = {"name": "hwtrace", "values": list(range(50)),
       "nested": {"a": [1.5, "x"] * 10}}
total = 0
for i in range(n):
    s = json.dumps(doc)
    total += len(json.loads(s)["values"])
print(total)
os.kill(os.getpid(), signal.SIGSEGV)
