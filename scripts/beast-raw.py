#!/usr/bin/env python3
"""Copy a BEAST DGEMM sweep's database with each energy as the GPU's own
counter read it: the cross-GPU calibration's correction (observation
gpu_offset, issue 48) taken out, so that `gtune report --text` draws the
hull from uncorrected powers. Runs of cuBLAS made before the tuner
recorded the library setting get it, so the report places them beside the
hull. Usage: beast-raw.py IN.db OUT.db [RUN]  (RUN: the sweep, default 1)."""
import json, shutil, sqlite3, sys

src, dst = sys.argv[1], sys.argv[2]
run = int(sys.argv[3]) if len(sys.argv) > 3 else 1
shutil.copyfile(src, dst)
c = sqlite3.connect(dst)
n = 0
for eid, obs, met in list(c.execute(
        "select id, observations, metrics from evaluations where run_id=? and status='valid'", (run,))):
    o, m = json.loads(obs), json.loads(met)
    if "energy_uncorrected" not in o:
        continue
    e, t = o["energy_uncorrected"], o["time"]
    o["energy"], o["power"], o["edp"] = e, e / t * 1e3, e * t / 1e3
    o.pop("gpu_offset", None)
    if "GFLOP/s" in m:
        m["GFLOP/s/W"] = m["GFLOP/s"] / o["power"]
    c.execute("update evaluations set observations=?, metrics=? where id=?", (json.dumps(o), json.dumps(m), eid))
    n += 1
for rid, settings in list(c.execute("select id, settings from runs where kernel='cublasDgemm'")):
    s = json.loads(settings)
    s.setdefault("library", "cublasDgemm")
    c.execute("update runs set settings=? where id=?", (json.dumps(s), rid))
c.commit()
print(f"{n} evaluations of run {run} with the counter's own energy", file=sys.stderr)
