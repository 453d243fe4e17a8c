"""A second script reaching a deployed function by name:

    python3 lookup.py APP NAME [JSON_ARG] [--version N] [--put]

calls it (spawn, then get) with the JSON argument, if any, and prints
"task: ID" and "lookup: RESULT_AS_JSON"; --put puts the argument on a
task queue and prints "put: ID". A levers9 error prints
"lookup: error CODE".
"""

import argparse
import json

import levers9

p = argparse.ArgumentParser()
p.add_argument("app")
p.add_argument("name")
p.add_argument("arg", nargs="?")
p.add_argument("--version", type=int)
p.add_argument("--put", action="store_true")
a = p.parse_args()
args = [json.loads(a.arg)] if a.arg is not None else []
try:
    f = levers9.Function.lookup(a.app, a.name, version=a.version)
    if a.put:
        call = f.put(*args)
        print("put:", getattr(call, "object_id", call), flush=True)
    else:
        call = f.spawn(*args)
        print("task:", call.object_id, flush=True)
        print("lookup:", json.dumps(call.get(timeout=300)), flush=True)
except levers9.Error as e:
    print("lookup: error", getattr(e, "code", None) or type(e).__name__, flush=True)
